package llamacpp

import (
	"context"
	"testing"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/worker"
)

// TestSpecWorker: a real worker started with speculation flags loads the draft model, applies
// the default mode to requests that name none, and its replies and /slots carry the counts.
func TestSpecWorker(t *testing.T) {
	c, log := startWorker(t, worker.Options{ContextLength: 512, Parallel: 2, Threads: 1,
		Speculative: llm.SpecNgram, DraftTokens: 4, DraftModelPath: testModelPath})
	if got := c.Info().DraftModel; got != testModelPath {
		t.Fatalf("Info().DraftModel = %q, want %q\nlog:\n%s", got, testModelPath, log)
	}
	ctx := context.Background()
	var proposed int
	for _, mode := range []string{"", llm.SpecDraft} {
		req := greedy(specPrompts[1], 40)
		if mode != "" {
			req.Speculative = &llm.Speculative{Mode: mode}
		}
		var done *llm.Done
		err := c.Generate(ctx, req, func(ev llm.Event) error {
			if ev.Done != nil {
				done = ev.Done
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		want := mode
		if want == "" {
			want = llm.SpecNgram
		}
		if done == nil || done.Spec == nil || done.Spec.Mode != want || done.Spec.Proposed == 0 {
			t.Fatalf("mode %q: Done = %+v", mode, done)
		}
		proposed += done.Spec.Proposed
	}
	slots, err := c.Slots(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if slots.Totals.SpecProposed != proposed || slots.Totals.SpecAccepted == 0 {
		t.Fatalf("/slots totals %+v, the replies proposed %d", slots.Totals, proposed)
	}
}
