package enginetest

import (
	"testing"

	"github.com/superfluid/superfluid/runtime/llm"
)

// The fake reports Done.Spec exactly when a mode other than off is in effect: the request's,
// else the engine's default.
func TestSpecStats(t *testing.T) {
	done := func(e *Engine, spec *llm.Speculative) *llm.Done {
		events, err := run(t, e, &llm.Request{Prompt: "hi", Speculative: spec})
		if err != nil {
			t.Fatal(err)
		}
		return events[len(events)-1].Done
	}
	e := New(64, "abcdefghij")
	if d := done(e, nil); d.Spec != nil {
		t.Fatalf("no mode in effect, got %+v", d.Spec)
	}
	if d := done(e, &llm.Speculative{Mode: llm.SpecOff}); d.Spec != nil {
		t.Fatalf("mode off, got %+v", d.Spec)
	}
	d := done(e, &llm.Speculative{Mode: llm.SpecNgram})
	if d.Spec == nil || *d.Spec != (llm.SpecStats{Mode: llm.SpecNgram, Proposed: 5, Accepted: 3}) {
		t.Fatalf("ngram asked: %+v", d.Spec)
	}
	e.Speculative, e.SpecNote, e.CacheMiss, e.RestoredTokens = llm.SpecDraft, "a note", llm.CacheMissCold, 2
	if d := done(e, &llm.Speculative{DraftTokens: 4}); d.Spec == nil || d.Spec.Mode != llm.SpecDraft || d.Spec.Note != "a note" {
		t.Fatalf("the engine's default: %+v", d.Spec)
	}
	if d := done(e, &llm.Speculative{Mode: llm.SpecOff}); d.Spec != nil || d.CacheMiss != llm.CacheMissCold || d.RestoredTokens != 2 {
		t.Fatalf("off over the default: %+v", d)
	}
}
