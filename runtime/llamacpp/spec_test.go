package llamacpp

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/runtime/llm"
)

// specEngine loads path with a draft model (none when draft is "") on 4 lanes.
func specEngine(t *testing.T, path, draft string) *Engine {
	t.Helper()
	e, err := Load(Options{ModelPath: path, ContextLength: testCtx, Parallel: testParallel, DraftModelPath: draft})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// randomModel writes a random-weight model (the same vocabulary as stories260K: 512 tokens).
func randomModel(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "random.gguf")
	if err := gguftest.WriteTinyLlama(path, gguftest.TinyLlamaOptions{Seed: 7}); err != nil {
		t.Fatal(err)
	}
	return path
}

// withSpec is req with speculation in mode (draft tokens k; 0 keeps the default).
func withSpec(req *llm.Request, mode string, k int) *llm.Request {
	r := *req
	r.Speculative = &llm.Speculative{Mode: mode, DraftTokens: k}
	return &r
}

// sameGeneration fails unless got is want token for token, logprobs and finish reason
// included. want must carry two top alternatives per token: a verify batch computes a
// position's logits in a batch of another shape than plain decoding does, and llama.cpp's CPU
// kernels then sum in another order (logprobs agree to ~1e-3), which can break a near tie
// between the two best tokens; the outputs may part there, and only there.
func sameGeneration(t *testing.T, label string, want, got result) {
	t.Helper()
	var wl, gl []llm.TokenLogprob
	for _, ev := range want.events {
		wl = append(wl, ev.Logprobs...)
	}
	for _, ev := range got.events {
		gl = append(gl, ev.Logprobs...)
	}
	if len(wl) != want.done.Usage.CompletionTokens || len(gl) != got.done.Usage.CompletionTokens {
		t.Fatalf("%s: %d and %d logprobs for %d and %d tokens", label, len(wl), len(gl), want.done.Usage.CompletionTokens, got.done.Usage.CompletionTokens)
	}
	for i := range min(len(wl), len(gl)) {
		if string(wl[i].Bytes) != string(gl[i].Bytes) {
			if top := wl[i].Top; len(top) >= 2 && top[0].Logprob-top[1].Logprob < tieSlack {
				t.Logf("%s: parted at token %d of %d, a near tie (%q %g, %q %g)", label, i, len(wl), top[0].Token, top[0].Logprob, top[1].Token, top[1].Logprob)
				return
			}
			t.Fatalf("%s: speculation changed token %d: %q, plain %q\nplain %q (%s)\nspec  %q (%s)",
				label, i, gl[i].Bytes, wl[i].Bytes, want.text, want.done.FinishReason, got.text, got.done.FinishReason)
		}
		if d := wl[i].Logprob - gl[i].Logprob; d > logprobSlack || d < -logprobSlack || len(wl[i].Top) != len(gl[i].Top) {
			t.Fatalf("%s: token %d logprob %g (top %d), with speculation %g (top %d)", label, i, wl[i].Logprob, len(wl[i].Top), gl[i].Logprob, len(gl[i].Top))
		}
	}
	if len(wl) != len(gl) || want.text != got.text || want.done.FinishReason != got.done.FinishReason {
		t.Fatalf("%s: speculation changed the output:\nplain %q (%d tokens, %s)\nspec  %q (%d tokens, %s)",
			label, want.text, len(wl), want.done.FinishReason, got.text, len(gl), got.done.FinishReason)
	}
}

// tieSlack is how close (in log probability) two best tokens are for rounding to decide.
const tieSlack = 0.05

const logprobSlack = 0.02

// specPrompts: a reply that copies its input (where drafts are accepted) and free text.
var specPrompts = []string{
	"Once upon a time, there was a little girl named Lily. She liked to play outside. Once upon a time, there was a little girl named Lily. She",
	"Tom had a red ball. Tom had a red ball. Tom had a red ball. Tom had",
	"One day, a big dog",
}

// greedySame runs each prompt plain and with each mode, with max_tokens that cut drafts at
// every offset, and stop strings taken from the plain output (so some fall inside drafts).
func greedySame(t *testing.T, e *Engine, modes []string) {
	for _, prompt := range specPrompts {
		long := greedy(prompt, 120)
		long.Logprobs, long.TopLogprobs = true, 2
		plain := mustGenerate(t, e, long)
		reqs := []*llm.Request{long}
		for _, n := range []int{1, 2, 3, 5, 8, 13, 21, 34} {
			r := *long
			r.MaxTokens = n
			reqs = append(reqs, &r)
		}
		words := strings.Fields(plain.text)
		for i := 3; i < len(words); i += max(1, len(words)/6) {
			r := *long
			r.Stop = []string{words[i] + " " + words[min(i+1, len(words)-1)]}
			reqs = append(reqs, &r)
		}
		for _, req := range reqs {
			want := mustGenerate(t, e, req)
			for _, mode := range modes {
				for _, k := range []int{0, 1, 3, 16} {
					got := mustGenerate(t, e, withSpec(req, mode, k))
					label := fmt.Sprintf("%s k=%d prompt %.20q max %d stop %q", mode, k, prompt, req.MaxTokens, req.Stop)
					sameGeneration(t, label, want, got)
					if got.done.Spec == nil || got.done.Spec.Mode != mode {
						t.Fatalf("%s: Done.Spec = %+v", label, got.done.Spec)
					}
				}
			}
		}
	}
}

func TestSpecGreedySameNgram(t *testing.T) {
	greedySame(t, testEngine, []string{llm.SpecNgram})
}

func TestSpecGreedySameRandomModel(t *testing.T) {
	path := randomModel(t)
	greedySame(t, specEngine(t, path, path), []string{llm.SpecNgram, llm.SpecDraft})
}

func TestSpecGreedySameDraftModel(t *testing.T) {
	greedySame(t, specEngine(t, testModelPath, testModelPath), []string{llm.SpecDraft})
}

// TestSpecSelfDraftAcceptsAll: a model drafting for itself greedily proposes what it then
// samples, so (nearly) every draft is kept, and the output ends where plain decoding ends,
// EOS inside a draft included.
func TestSpecSelfDraftAcceptsAll(t *testing.T) {
	e := specEngine(t, testModelPath, testModelPath)
	if e.Info().DraftModel != testModelPath {
		t.Fatalf("Info().DraftModel = %q", e.Info().DraftModel)
	}
	before, _ := e.Slots(t.Context())
	var proposed, accepted, eos int
	for i, prompt := range specPrompts {
		req := greedy(prompt, 400)
		req.Logprobs, req.TopLogprobs = true, 2
		want := mustGenerate(t, e, req)
		got := mustGenerate(t, e, withSpec(req, llm.SpecDraft, 8))
		sameGeneration(t, fmt.Sprintf("prompt %d", i), want, got)
		s := got.done.Spec
		proposed += s.Proposed
		accepted += s.Accepted
		if got.done.FinishReason == llm.FinishStop {
			eos++
		}
	}
	if proposed < 100 || float64(accepted) < 0.95*float64(proposed) {
		t.Fatalf("self-draft kept %d of %d drafted tokens, want ≥ 95%%", accepted, proposed)
	}
	if eos == 0 {
		t.Logf("no reply ended with EOS within 400 tokens; EOS inside a draft was not seen")
	}
	after, _ := e.Slots(t.Context())
	if after.Totals.SpecProposed-before.Totals.SpecProposed != proposed || after.Totals.SpecAccepted-before.Totals.SpecAccepted != accepted {
		t.Fatalf("/slots totals moved by %d/%d, the replies say %d/%d", after.Totals.SpecProposed-before.Totals.SpecProposed,
			after.Totals.SpecAccepted-before.Totals.SpecAccepted, proposed, accepted)
	}
	t.Logf("self-draft: %d of %d kept, %d of %d replies ended with EOS", accepted, proposed, eos, len(specPrompts))
}

// TestSpecLanesMixed: four lanes at once, speculative (both drafters) and plain side by side,
// each the same as alone without speculation.
func TestSpecLanesMixed(t *testing.T) {
	e := specEngine(t, testModelPath, testModelPath)
	modes := []string{llm.SpecNgram, "", llm.SpecDraft, llm.SpecOff}
	var reqs []*llm.Request
	var want []result
	for i := range 8 {
		req := greedy(specPrompts[i%len(specPrompts)], 60+10*i)
		req.Logprobs, req.TopLogprobs = true, 2
		reqs = append(reqs, req)
		want = append(want, mustGenerate(t, e, req))
	}
	for round := range 3 {
		got := make([]result, len(reqs))
		var wg sync.WaitGroup
		for i, req := range reqs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := req
				if m := modes[(i+round)%len(modes)]; m != "" {
					r = withSpec(req, m, 4)
				}
				got[i], _ = generate(t, e, r)
			}()
		}
		wg.Wait()
		for i := range reqs {
			if got[i].events == nil {
				t.Fatalf("round %d request %d failed", round, i)
			}
			sameGeneration(t, fmt.Sprintf("round %d request %d", round, i), want[i], got[i])
		}
	}
}

// TestSpecGrammarLogprobs: a JSON format with logprobs and top alternatives, greedy: the same
// with speculation on.
func TestSpecGrammarLogprobs(t *testing.T) {
	e := specEngine(t, testModelPath, testModelPath)
	for _, prompt := range specPrompts {
		req := greedy(prompt, 80)
		req.Format, req.Logprobs, req.TopLogprobs = llm.FormatJSON, true, 3
		want := mustGenerate(t, e, req)
		for _, mode := range []string{llm.SpecNgram, llm.SpecDraft} {
			got := mustGenerate(t, e, withSpec(req, mode, 6))
			sameGeneration(t, mode+" json", want, got)
			checkLogprobs(t, got, nil, 3, false)
		}
	}
}

// TestSpecDone: Done.Spec is nil with speculation off, set (Proposed may be 0) when it is on,
// with a note when a draft model is asked for and none is loaded; the engine's default mode
// applies to requests that name none.
func TestSpecDone(t *testing.T) {
	req := greedy("Spec done test. One day", 12)
	if r := mustGenerate(t, testEngine, req); r.done.Spec != nil {
		t.Fatalf("speculation off: Done.Spec = %+v", r.done.Spec)
	}
	if r := mustGenerate(t, testEngine, withSpec(req, llm.SpecOff, 0)); r.done.Spec != nil {
		t.Fatalf("speculative off: Done.Spec = %+v", r.done.Spec)
	}
	r := mustGenerate(t, testEngine, withSpec(req, llm.SpecDraft, 0))
	if s := r.done.Spec; s == nil || s.Mode != llm.SpecNgram || !strings.Contains(s.Note, "no draft model") {
		t.Fatalf("draft without a draft model: Done.Spec = %+v", s)
	}
	zero := *req
	zero.MaxTokens = 1
	if r := mustGenerate(t, testEngine, withSpec(&zero, llm.SpecNgram, 0)); r.done.Spec == nil || r.done.Spec.Proposed != 0 {
		t.Fatalf("one token: Done.Spec = %+v, want set with nothing proposed", r.done.Spec)
	}
	if _, err := generate(t, testEngine, withSpec(req, "medusa", 0)); err == nil || !strings.Contains(err.Error(), "ngram") {
		t.Fatalf("unknown mode: %v", err)
	}
	e, err := Load(Options{ModelPath: testModelPath, ContextLength: testCtx, Parallel: 2, Speculative: llm.SpecNgram, DraftTokens: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	r = mustGenerate(t, e, greedy(specPrompts[1], 40))
	if s := r.done.Spec; s == nil || s.Mode != llm.SpecNgram || s.Proposed == 0 {
		t.Fatalf("engine default ngram: Done.Spec = %+v", s)
	}
	if _, err := Load(Options{ModelPath: testModelPath, Speculative: "fast"}); err == nil || !strings.Contains(err.Error(), "fast") {
		t.Fatalf("Load with an unknown mode: %v", err)
	}
}

// TestSpecDraftVocabMismatch: a draft model with another vocabulary fails Load naming both
// files and both sizes.
func TestSpecDraftVocabMismatch(t *testing.T) {
	needStories(t)
	other := filepath.Join(sharedModels, "llama-2-tiny-random.gguf")
	target := randomModel(t)
	_, err := Load(Options{ModelPath: target, ContextLength: testCtx, Parallel: 2, DraftModelPath: other})
	if err == nil {
		t.Fatal("Load with a draft model of another vocabulary succeeded")
	}
	for _, want := range []string{target, other, "32000", "512"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}
