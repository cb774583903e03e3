package llamacpp

import (
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/llm"
)

// sampledPositions is how many generated tokens the distribution test looks at; the first
// comes from the prompt's last row, before any draft, and is left out of the comparison.
const sampledPositions = 4

// tokenDistributions generates n replies at temperature 0.8, top_k 6, from seeds first..first+n-1 and
// counts, at each of the first sampledPositions generated tokens, which token came.
func tokenDistributions(t *testing.T, e *Engine, prompt string, spec *llm.Speculative, first uint64, n int) ([]map[string]int, llm.SpecStats) {
	t.Helper()
	counts := make([]map[string]int, sampledPositions)
	for i := range counts {
		counts[i] = map[string]int{}
	}
	var total llm.SpecStats
	for s := range n {
		req := &llm.Request{Prompt: prompt, AddSpecial: true, MaxTokens: sampledPositions, IgnoreEOS: true, Logprobs: true,
			Sampling: llm.Sampling{Temperature: ptr(0.8), TopK: ptr(6), Seed: first + uint64(s)}, Speculative: spec}
		r := mustGenerate(t, e, req)
		pos := 0
		for _, ev := range r.events {
			for _, lp := range ev.Logprobs {
				counts[pos][string(lp.Bytes)]++
				pos++
			}
		}
		if d := r.done.Spec; d != nil {
			total.Proposed += d.Proposed
			total.Accepted += d.Accepted
		}
	}
	return counts, total
}

// totalVariation is half the L1 distance between two empirical distributions of n samples each.
func totalVariation(a, b map[string]int, n int) float64 {
	d := 0.0
	for k, v := range a {
		d += math.Abs(float64(v - b[k]))
	}
	for k, v := range b {
		if _, ok := a[k]; !ok {
			d += float64(v)
		}
	}
	return d / 2 / float64(n)
}

// specDistance is the largest total variation, over the first generated positions, between
// plain sampling and speculation (different seeds on each side, so it is a test of the
// distribution, not of replaying one random stream).
func specDistance(t *testing.T, e *Engine, prompt string, spec *llm.Speculative, n int) (float64, llm.SpecStats) {
	plain, _ := tokenDistributions(t, e, prompt, nil, 1, n)
	sped, stats := tokenDistributions(t, e, prompt, spec, 1_000_000, n)
	worst := 0.0
	for i := 1; i < len(plain); i++ {
		worst = max(worst, totalVariation(plain[i], sped[i], n))
	}
	return worst, stats
}

// tvBound: with 1000 samples a side, two samples of one distribution differ by up to about
// 0.08 in total variation at these positions; keeping every draft moves it to 0.15-0.35.
const (
	tvSamples = 1000
	tvBound   = 0.11
)

// sampledPrompt repeats itself, so the drafters propose often, and the model at temperature
// 0.8 often disagrees.
const sampledPrompt = "Tom had a red ball. Tom had a red ball. Tom had a red ball. Tom had a red ball. Tom"

// TestSpecSampledDistribution: at temperature > 0 the tokens speculation yields follow the
// target model's distribution, for both drafters, and acceptance is neither all nor nothing.
func TestSpecSampledDistribution(t *testing.T) {
	needStories(t)
	e := specEngine(t, testModelPath, testModelPath)
	for _, mode := range []string{llm.SpecNgram, llm.SpecDraft} {
		tv, stats := specDistance(t, e, sampledPrompt, &llm.Speculative{Mode: mode, DraftTokens: 3}, tvSamples)
		rate := stats.AcceptanceRate()
		t.Logf("%s: total variation %.3f, %d of %d drafts kept (%.2f)", mode, tv, stats.Accepted, stats.Proposed, rate)
		if tv > tvBound {
			t.Errorf("%s: total variation %.3f from plain sampling, want ≤ %.2f", mode, tv, tvBound)
		}
		if stats.Proposed < tvSamples/10 || rate < 0.05 || rate > 0.98 {
			t.Errorf("%s: %d of %d drafts kept; want many drafts, some kept and some not", mode, stats.Accepted, stats.Proposed)
		}
	}
}

// TestSpecSampledDistributionCatchesBrokenVerify: the same test fails when verification keeps
// every draft (trustDrafts), so its bound means something.
func TestSpecSampledDistributionCatchesBrokenVerify(t *testing.T) {
	e := specEngine(t, testModelPath, testModelPath)
	trustDrafts = true
	defer func() { trustDrafts = false }()
	for _, mode := range []string{llm.SpecNgram, llm.SpecDraft} {
		tv, _ := specDistance(t, e, sampledPrompt, &llm.Speculative{Mode: mode, DraftTokens: 3}, tvSamples)
		t.Logf("%s, every draft kept: total variation %.3f", mode, tv)
		if tv <= tvBound {
			t.Errorf("%s: keeping every draft left the total variation at %.3f, within the bound %.2f", mode, tv, tvBound)
		}
	}
}

// TestSpecSampledSameSeed: verification draws from the sampler's random stream exactly as
// plain decoding does (one draw per kept position), so one seed gives one reply either way.
func TestSpecSampledSameSeed(t *testing.T) {
	e := specEngine(t, testModelPath, testModelPath)
	for seed := range uint64(20) {
		req := &llm.Request{Prompt: sampledPrompt, AddSpecial: true, MaxTokens: 30, Logprobs: true, TopLogprobs: 2,
			Sampling: llm.Sampling{Temperature: ptr(0.7), Seed: seed + 1}}
		want := mustGenerate(t, e, req)
		for _, mode := range []string{llm.SpecNgram, llm.SpecDraft} {
			sameGeneration(t, fmt.Sprintf("seed %d %s", seed+1, mode), want, mustGenerate(t, e, withSpec(req, mode, 4)))
		}
	}
}

// TestSpecDraftBiggerWarns: a draft model bigger than the target loads, with a warning.
func TestSpecDraftBiggerWarns(t *testing.T) {
	needStories(t)
	small := randomModel(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := os.Stderr
	os.Stderr = w
	e, err := Load(Options{ModelPath: small, ContextLength: testCtx, Parallel: 2, DraftModelPath: testModelPath})
	os.Stderr = stderr
	w.Close()
	out, _ := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if !strings.Contains(string(out), "bigger than the model it drafts for") {
		t.Fatalf("no warning on stderr: %q", out)
	}
	if got := mustGenerate(t, e, withSpec(greedy(specPrompts[1], 20), llm.SpecDraft, 4)); got.done.Spec == nil || got.done.Spec.Mode != llm.SpecDraft {
		t.Fatalf("Done.Spec = %+v", got.done.Spec)
	}
}
