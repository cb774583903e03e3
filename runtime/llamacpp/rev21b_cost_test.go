package llamacpp

import (
	"testing"
	"time"

	"github.com/ollama/ollama/llama"

	"github.com/superfluid/superfluid/runtime/llm"
)

// TestSpecDraftCostCounted (rev21b): the pause decides from what a drafted row costs; with a
// draft model, most of that cost is the draft model's own decodes (k of them per tick, before
// the target's). A draft model made slow (2ms a decode) must show in the learnt cost of a row
// and in the break-even rate, or draft mode goes on where it is slower than plain decoding.
func TestSpecDraftCostCounted(t *testing.T) {
	e, err := Load(Options{ModelPath: testModelPath, ContextLength: testCtx, Parallel: 1, DraftModelPath: testModelPath})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	const slow = 2 * time.Millisecond
	d := e.spec.draft
	decode := d.decode
	d.decode = func(b *llama.Batch) error {
		time.Sleep(slow)
		return decode(b)
	}
	prompt := "Once upon a time, there was a little girl named Lily."
	mustGenerate(t, e, greedy(prompt, 60)) // plain ticks: the baseline
	got := mustGenerate(t, e, withSpec(greedy(prompt, 200), llm.SpecDraft, 4))
	if got.done.Spec == nil || got.done.Spec.Proposed < 20 {
		t.Fatalf("Done.Spec = %+v", got.done.Spec)
	}
	if _, err := e.Slots(t.Context()); err != nil { // the loop is idle after this
		t.Fatal(err)
	}
	c := e.spec.cost
	base := c.plain[1]
	t.Logf("plain tick %.3gms, drafted row %.3gms, break-even %.3g", base*1e3, c.perRow*1e3, c.breakEven())
	if c.perRow < slow.Seconds()/2 {
		t.Fatalf("a drafted row costs %.3gms by the estimate, though each draft decode takes over %v: the draft model's time is not counted", c.perRow*1e3, slow)
	}
}
