package llamacpp

import (
	"testing"

	"github.com/superfluid/superfluid/runtime/llm"
)

// TestSpecDecodedCountsTokens (rev21b): /slots' Totals.Decoded and the decode rate
// (/props decode_tokens_per_second) count tokens; a rejected drafted row is compute, not a
// token. With a draft model that guesses badly, a reply of N tokens decodes what plain does.
func TestSpecDecodedCountsTokens(t *testing.T) {
	e := specEngine(t, testModelPath, randomModel(t))
	req := greedy(specPrompts[0], 60)
	req.IgnoreEOS = true
	decoded := func(r *llm.Request) (int, *llm.SpecStats) {
		before := totals(t, e).Decoded
		got := mustGenerate(t, e, r)
		return totals(t, e).Decoded - before, got.done.Spec
	}
	plain, _ := decoded(req)
	spec, s := decoded(withSpec(req, llm.SpecDraft, 8))
	if s == nil || s.Proposed == s.Accepted {
		t.Fatalf("no draft was rejected (Done.Spec %+v): nothing to tell", s)
	}
	if spec != plain {
		t.Fatalf("Totals.Decoded grew by %d for the reply with speculation, %d without (drafted %d, kept %d)", spec, plain, s.Proposed, s.Accepted)
	}
}
