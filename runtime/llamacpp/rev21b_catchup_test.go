package llamacpp

import (
	"testing"

	"github.com/ollama/ollama/llama"

	"github.com/superfluid/superfluid/runtime/llm"
)

// TestSpecDraftCatchUpBounded (rev21b): the draft model catches up on a lane's prompt inside
// the loop's tick, while every other lane waits for that tick. The target prefills a prompt a
// batch at a time so that decoding lanes keep their pace; the draft model's catch-up must not
// put a whole long prompt in one tick either: no more than a batch of catch-up rows (plus
// the greedy steps) between two target decodes.
func TestSpecDraftCatchUpBounded(t *testing.T) {
	const batch, k = 32, 4
	e, err := Load(Options{ModelPath: testModelPath, ContextLength: testCtx, Parallel: 2, BatchSize: batch, DraftModelPath: testModelPath})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	var tickRows, worst int // touched on the loop goroutine only, read after Generate returns
	d := e.spec.draft
	draftDecode, targetDecode := d.decode, e.decode
	d.decode = func(b *llama.Batch) error {
		tickRows += b.NumTokens()
		worst = max(worst, tickRows)
		return draftDecode(b)
	}
	e.decode = func(b *llama.Batch) error {
		tickRows = 0
		return targetDecode(b)
	}
	prompt := story(t, e, "Lily", 300)
	got := mustGenerate(t, e, withSpec(greedy(prompt, 24), llm.SpecDraft, k))
	if got.done.Spec == nil || got.done.Spec.Proposed == 0 {
		t.Fatalf("nothing drafted: Done.Spec = %+v", got.done.Spec)
	}
	if limit := batch + 2*k; worst > limit {
		t.Fatalf("the draft model decoded %d rows in one tick (batch %d, %d-token prompt): every other lane waited for all of them", worst, batch, len(tokenize(t, e, prompt)))
	}
}
