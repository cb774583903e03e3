package bench

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/runtime/llamacpp"
	"github.com/superfluid/superfluid/server"
	"github.com/superfluid/superfluid/server/core"
)

// inProcessServe serves a model from this process: the core over the real engine (loaded with
// the projector), behind the real router on a loopback port. The app's servers run the model
// in a worker process instead (app/cmd_bench.go); the bench cannot import the app.
func inProcessServe(t *testing.T) func(ServeOptions) (*Server, error) {
	return func(so ServeOptions) (*Server, error) {
		e, err := llamacpp.Load(llamacpp.Options{ModelPath: so.Model, ProjectorPath: so.Projector, ContextLength: orDefault(so.ContextLength, 1024),
			Parallel: so.Parallel, Threads: so.Threads})
		if err != nil {
			return nil, err
		}
		m := core.DescribeModel("tiny", so.Model, 0)
		m.Engine = e
		ts := httptest.NewServer(server.New(server.Config{}, core.New(core.Config{}, nil, m)))
		return &Server{URL: ts.URL, Model: m.ID, Stop: func() { ts.Close(); e.Close() }}, nil
	}
}

// TestMediaSuite runs the media suite on a written tiny llama with the projectors it writes
// for it (small images, a short clip): every row measured in every run on both sides, numbers
// positive, the report's JSON and table shapes. Timings are never asserted.
func TestMediaSuite(t *testing.T) {
	model := filepath.Join(t.TempDir(), "tiny.gguf")
	if err := gguftest.WriteTinyLlama(model, gguftest.TinyLlamaOptions{}); err != nil {
		t.Fatal(err)
	}
	o := Options{Suite: "media", Repeat: 2, ImageSide: 40, AudioSeconds: 2, ContextLength: 1024, TempDir: t.TempDir(), Serve: inProcessServe(t)}
	r, err := measureMedia(model, o)
	if err != nil {
		t.Fatal(err)
	}
	if !r.WrittenProjectors || !strings.Contains(r.Projectors, "random-weight projectors written for the model's width 64") ||
		r.Runs != 2 || r.ImageSide != 40 || r.AudioSeconds != 2 || len(r.Rows) != 3 {
		t.Fatalf("report %+v", r)
	}
	for i, want := range []struct {
		prefix string
		atMost bool
		target float64
		inNote string
	}{
		{"(a) TTFT, new image: engine vs server", false, 0.95, "prompt tokens (the image's positions included)"},
		{"(b) transcription, 2 s clip: engine vs server", false, 0.95, "tokens generated"},
		{"(c) TTFT, image re-sent vs new (server)", true, 0.15, "re-sent: cached tokens"},
	} {
		row := r.Rows[i]
		if row.Name != want.prefix || row.Unit != "ms" || row.AtMost != want.atMost || row.Target != want.target || !strings.Contains(row.Note, want.inNote) {
			t.Errorf("row %d: %+v", i, row)
		}
		if len(row.A) != 2 || len(row.B) != 2 || row.AMedian <= 0 || row.BMedian <= 0 || row.Ratio <= 0 || (row.Verdict != "PASS" && row.Verdict != "FAIL") {
			t.Errorf("row %d measured %+v", i, row)
		}
		for j := range row.A {
			if row.A[j] <= 0 || row.B[j] <= 0 {
				t.Errorf("row %d run %d: %v and %v ms", i, j, row.A[j], row.B[j])
			}
		}
	}
	// The engine and the server ran the same prompts: as many tokens, run for run.
	for _, row := range r.Rows {
		if len(row.PromptTokensA) != 2 || !slices.Equal(row.PromptTokensA, row.PromptTokensB) || row.PromptTokensA[0] <= 0 || strings.Contains(row.Note, "differ") {
			t.Errorf("%s: prompt tokens %v and %v", row.Name, row.PromptTokensA, row.PromptTokensB)
		}
	}
	var table bytes.Buffer
	writeMedia(&table, r)
	for _, want := range []string{"random-weight projectors", "images 40×40 PNG", "clips 2 s", "B med [min]", "A med [min]",
		r.Rows[0].Name, r.Rows[1].Name, r.Rows[2].Name, ">= 0.95x", "<= 0.15x", "verdict"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	var js bytes.Buffer
	if err := writeMediaJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	var back MediaReport
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.Rows) != 3 || back.Rows[2].B[0] != r.Rows[2].B[0] {
		t.Errorf("JSON %v: %s", err, js.String())
	}
	t.Log(table.String())
}
