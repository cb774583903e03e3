package bench

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/gguf"
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
		if i == 0 && (len(row.EngineDecode) != 2 || row.EngineDecode[0] <= 0 || row.EngineDecode[1] <= 0 || row.RatioWithDecode <= row.Ratio ||
			!strings.Contains(row.Note, "llama.cpp's own PNG decode (stb, as llama-server)")) {
			t.Errorf("row (a) has no engine decode: %v ms, ratio with it %v, note %q", row.EngineDecode, row.RatioWithDecode, row.Note)
		}
		if i > 0 && (row.EngineDecode != nil || row.RatioWithDecode != 0) {
			t.Errorf("row %d has an engine decode: %v", i, row.EngineDecode)
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
	// The re-sent image was found in the cache: more of its prompt than the image's positions.
	positions := gguftest.VisionProjectorOptions{ImageSize: writtenImageSize, PatchSize: writtenPatchSize}.ImageTokens()
	if c := r.Rows[2].CachedTokensA; len(c) != 2 || c[0] <= positions || c[1] <= positions {
		t.Errorf("re-sent image: cached tokens %v, want more than its %d positions each run", c, positions)
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

// TestMediaProjectors: without --mmproj the suite writes both projectors for the model's
// width; a given projector runs the kinds it encodes, and the kind it lacks is a row that says
// why; a file that is not a projector is refused.
func TestMediaProjectors(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "tiny.gguf")
	if err := gguftest.WriteTinyLlama(model, gguftest.TinyLlamaOptions{Embd: 96, Heads: 4}); err != nil {
		t.Fatal(err)
	}
	written, err := mediaProjectorsFor(model, "", dir)
	if err != nil || !written.written || written.vision == "" || written.audio == "" || !strings.Contains(written.about, "width 96") {
		t.Fatalf("written: %+v, %v", written, err)
	}
	for _, path := range []string{written.vision, written.audio} {
		f, err := gguf.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if facts, err := f.Projector(); err != nil || facts.Width != 96 {
			t.Errorf("%s: %+v, %v; want a projector 96 wide", path, facts, err)
		}
	}
	given, err := mediaProjectorsFor(model, written.vision, dir)
	if err != nil || given.written || given.vision != written.vision || given.audio != "" || !strings.Contains(given.about, "--mmproj") {
		t.Fatalf("given a vision projector: %+v, %v", given, err)
	}
	if _, err := mediaProjectorsFor(model, model, dir); err == nil || !strings.Contains(err.Error(), "not a multimodal projector") {
		t.Errorf("given the model as its projector: %v", err)
	}
	r := &MediaReport{Model: model, Projectors: given.about, Runs: 1, ImageSide: 8, AudioSeconds: 1}
	row := missingRow(transcribeRowName(1), mediaEngineTarget, false, "the projector has no audio encoder")
	r.Rows = append(r.Rows, MediaRatio{Name: row.name, Unit: row.unit, Target: row.target, Verdict: row.verdict(), Note: row.note})
	var out bytes.Buffer
	writeMedia(&out, r)
	for _, want := range []string{"(b) transcription, 1 s clip", ">= 0.95x", "n/a", "not available: the projector has no audio encoder"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}
