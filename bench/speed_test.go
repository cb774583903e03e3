package bench

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
)

func TestSpeedVerdicts(t *testing.T) {
	for _, c := range []struct {
		row  speedRow
		want string
	}{
		{speedRow{base: []float64{10, 11, 9}, with: []float64{20, 19, 21}, target: 1.8}, "PASS"},
		{speedRow{base: []float64{10, 11, 9}, with: []float64{12, 13, 11}, target: 1.8}, "FAIL"},
		{speedRow{base: []float64{1000}, with: []float64{50}, target: 0.1, lowerWins: true}, "PASS"},
		{speedRow{base: []float64{1000}, with: []float64{500}, target: 0.1, lowerWins: true}, "FAIL"},
		{speedRow{base: []float64{10}, with: []float64{20}, target: 1, unavailable: true}, "n/a"},
		{speedRow{target: 1}, "n/a"},
	} {
		if got := c.row.verdict(); got != c.want {
			t.Errorf("verdict of %+v (ratio %.2f) = %s, want %s", c.row, c.row.ratio(), got, c.want)
		}
	}
	var out bytes.Buffer
	printSpeed(&out, []speedRow{
		{name: "(a) n-gram", unit: "tok/s", base: []float64{10, 12}, with: []float64{25, 20}, target: 1.8, note: "drafted 9"},
		{name: "(b) draft", unit: "tok/s", target: 1, unavailable: true, note: "not available: no draft model"},
	})
	for _, want := range []string{"(a) n-gram", "2.08x", ">= 1.80x", "PASS", "    drafted 9", "(b) draft", "n/a", "not available: no draft model"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}

// TestSpeedEngineRows runs the suite's engine parts on a small model: (d) loads both flash
// attention settings and measures both, (b) says why it has nothing to measure without a draft
// model, and measures (or says what the engine did instead) with one.
func TestSpeedEngineRows(t *testing.T) {
	model := filepath.Join(t.TempDir(), "tiny.gguf")
	if err := gguftest.WriteTinyLlama(model, gguftest.TinyLlamaOptions{}); err != nil {
		t.Fatal(err)
	}
	o := Options{Repeat: 2, DecodeTokens: 64, PrefillTokens: 32, ContextLength: 256}
	flash, err := flashRow(model, o)
	if err != nil {
		t.Fatal(err)
	}
	// A tiny model's tokens come grouped, so one run's rate can be 0 (all in its first event).
	if len(flash.base) != 2 || len(flash.with) != 2 ||
		!strings.Contains(flash.name, "(auto) vs") || !strings.Contains(flash.note, "prefill") {
		t.Errorf("flash row %+v", flash)
	}
	draft, err := draftRow(model, o)
	if err != nil || !draft.unavailable || !strings.Contains(draft.note, "--draft-model") {
		t.Errorf("draft row without a draft model: %+v, %v", draft, err)
	}
	o.DraftModel = model
	if draft, err = draftRow(model, o); err != nil || len(draft.base) != 2 || len(draft.with) != 2 {
		t.Fatalf("draft row: %+v, %v", draft, err)
	}
	t.Logf("draft row with the model drafting for itself: %+v", draft)
}
