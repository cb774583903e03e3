package llamacpp

import (
	"fmt"
	"testing"

	"github.com/superfluid/superfluid/runtime/llm"
)

// TestSpecGreedySamePenalties (rev21b): the repeat/presence/frequency penalties and a logit
// bias see each verified token in order, so a repetitive reply — where drafts are proposed
// and the penalties then reject them — is the plain one, with IgnoreEOS too.
func TestSpecGreedySamePenalties(t *testing.T) {
	e := specEngine(t, testModelPath, testModelPath)
	for i, prompt := range specPrompts {
		for _, ignoreEOS := range []bool{false, true} {
			req := greedy(prompt, 150)
			req.Logprobs, req.TopLogprobs = true, 2
			req.IgnoreEOS = ignoreEOS
			req.Sampling.RepeatPenalty = ptr(1.3)
			req.Sampling.PresencePenalty, req.Sampling.FrequencyPenalty = 0.4, 0.2
			req.Sampling.LogitBias = map[int]float64{300: 2}
			want := mustGenerate(t, e, req)
			for _, mode := range []string{llm.SpecNgram, llm.SpecDraft} {
				got := mustGenerate(t, e, withSpec(req, mode, 8))
				sameGeneration(t, fmt.Sprintf("prompt %d %s ignoreEOS %v", i, mode, ignoreEOS), want, got)
				if got.done.Spec == nil || (mode == llm.SpecDraft && got.done.Spec.Proposed == 0) {
					t.Fatalf("prompt %d %s: Done.Spec = %+v", i, mode, got.done.Spec)
				}
				t.Logf("prompt %d %s ignoreEOS %v: kept %d of %d", i, mode, ignoreEOS, got.done.Spec.Accepted, got.done.Spec.Proposed)
			}
		}
	}
}
