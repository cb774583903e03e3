package llamacpp

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/worker"
)

// writeNaNModel writes a tiny llama whose output matrix is all NaN, so every logit is NaN.
func writeNaNModel(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "nan.gguf")
	if err := gguftest.WriteTinyLlama(path, gguftest.TinyLlamaOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := gguftest.FillF32(path, "output.weight", float32(math.NaN())); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestNaNLogits: a model whose logits are all NaN fails each generation, with and without a
// grammar, with llm.ErrModelFault (an engine failure that is no crash), and its worker stays
// up: before, a grammar request panicked in Grammar.Apply on an empty candidate list and the
// worker died.
func TestNaNLogits(t *testing.T) {
	c, log := startWorker(t, worker.Options{ModelPath: writeNaNModel(t), ContextLength: 256, Parallel: 2, Threads: 1})
	pid := c.PID()
	ctx := context.Background()
	for _, format := range []string{"", llm.FormatJSON} {
		req := greedy("Once upon a time", 8)
		req.Format = format
		err := c.Generate(ctx, req, func(llm.Event) error { return nil })
		if !errors.Is(err, llm.ErrModelFault) || !errors.Is(err, llm.ErrEngineFailure) || errors.Is(err, worker.ErrWorkerExited) ||
			!strings.Contains(err.Error(), "no finite logit") {
			t.Errorf("format %q: Generate = %v, want llm.ErrModelFault (no finite logit), not a worker exit\nlog:\n%s", format, err, log)
		}
		if c.PID() != pid {
			t.Fatalf("format %q: the worker died (pid %d, now %d)\nlog:\n%s", format, pid, c.PID(), log)
		}
	}
	if ids, err := c.Tokenize(ctx, "Once upon a time", true, true); err != nil || len(ids) == 0 {
		t.Errorf("Tokenize on the NaN model's worker afterwards = %v, %v", ids, err)
	}
	// A good model on the same test binary still generates, grammar included.
	req := greedy("Once upon a time", 8)
	req.Format = llm.FormatJSON
	if r := mustGenerate(t, testEngine, req); r.done.Usage.CompletionTokens == 0 {
		t.Errorf("the good model generated nothing: %+v", r.done)
	}
}

// TestGrammarWithEveryTokenBanned: a greedy JSON request whose logit_bias bans every token
// leaves the grammar's probe no candidate; it ends (nothing may be drawn) instead of handing
// llama.cpp's grammar an empty list, which panicked in Grammar.Apply and killed the worker.
func TestGrammarWithEveryTokenBanned(t *testing.T) {
	req := greedy("Once upon a time", 8)
	req.Format = llm.FormatJSON
	req.Sampling.LogitBias = map[int]float64{}
	for id := range testEngine.Info().VocabSize {
		req.Sampling.LogitBias[id] = -100
	}
	r, err := generate(t, testEngine, req)
	if err != nil || r.done.Usage.CompletionTokens != 0 {
		t.Errorf("Generate with every token banned = %q, %+v, %v; want an empty reply", r.text, r.done, err)
	}
}
