package llamacpp

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/llm"
)

// TestSpecBench measures speculation, engine-direct, on the models SPEC_BENCH names
// (comma-separated .gguf paths; the test skips without it):
//
//	SPEC_BENCH=../../../shared/models/stories260K.gguf,/tmp/tiny1b.gguf make gotest PKG='-v ./runtime/llamacpp' RUN=TestSpecBench
//
// It reports the cost of a verify batch of k+1 tokens against one token (which decides
// defaultDraftTokens) and decode tokens/s plain against n-gram speculation on a reply that
// rewrites a long text and on free text. SPEC_BENCH_TOKENS sets the tokens generated per run
// (default 128), SPEC_BENCH_THREADS the threads (default: the engine's choice). Each figure is
// the median of 3 runs (verify batches: 7), the sizes interleaved so that load from other
// processes falls on all of them alike.
func TestSpecBench(t *testing.T) {
	paths := os.Getenv("SPEC_BENCH")
	if paths == "" {
		t.Skip("set SPEC_BENCH to model paths to measure speculation")
	}
	tokens := atoiOr(os.Getenv("SPEC_BENCH_TOKENS"), 128)
	threads := atoiOr(os.Getenv("SPEC_BENCH_THREADS"), 0)
	for _, path := range strings.Split(paths, ",") {
		e, err := Load(Options{ModelPath: path, ContextLength: 2048, Parallel: 1, Threads: threads})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d threads", path, e.Info().Threads)
		benchVerifyCost(t, e)
		benchDecode(t, e, tokens)
		e.Close()
	}
}

func atoiOr(s string, def int) int {
	if s == "" {
		return def
	}
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return def
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// benchVerifyCost times llama_decode of n = 1, 3, 5, 9, 17 tokens (all with logits) after a
// 256-token context, on the idle engine's context (its loop waits for a job and touches none).
func benchVerifyCost(t *testing.T, e *Engine) {
	const ctx, reps = 256, 7
	text := strings.Repeat("Once upon a time, there was a little girl named Lily. ", 40)
	prompt := tokenize(t, e, text)[:ctx]
	e.lctx.KvCacheSeqRm(0, 0, -1)
	e.batch.Clear()
	for i, tok := range prompt {
		e.batch.Add(tok, nil, i, i == len(prompt)-1, 0)
	}
	if err := e.lctx.Decode(e.batch); err != nil {
		t.Fatal(err)
	}
	sizes := []int{1, 3, 5, 9, 17}
	times := make(map[int][]float64)
	for range reps {
		for _, n := range sizes {
			e.batch.Clear()
			for i := range n {
				e.batch.Add(prompt[i], nil, ctx+i, true, 0)
			}
			began := time.Now()
			if err := e.lctx.Decode(e.batch); err != nil {
				t.Fatal(err)
			}
			_ = e.lctx.GetLogitsIth(n - 1)
			times[n] = append(times[n], time.Since(began).Seconds()*1000)
			e.lctx.KvCacheSeqRm(0, ctx, -1)
		}
	}
	base := median(times[1])
	for _, n := range sizes {
		m := median(times[n])
		t.Logf("verify batch of %2d tokens (k=%2d): median %.2f ms, %.2f× one token", n, n-1, m, m/base)
	}
	e.lctx.KvCacheSeqRm(0, 0, -1)
	e.lanes[0].cache = e.lanes[0].cache[:0]
}

// benchDecode compares decode tokens/s plain and with n-gram speculation on a rewrite (the
// prompt holds a long text and the start of its copy) and on free text.
func benchDecode(t *testing.T, e *Engine, n int) {
	story := "Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her friends. One day, she saw a big red ball under a tree. She wanted to play with it, but it was too high. Lily asked her mom for help. Her mom smiled and said, \"Let's get it together.\" They found a long stick and pushed the ball down. Lily was so happy. She played with the ball all day and shared it with her friends. At the end of the day, she said thank you to her mom and went home to sleep. "
	long := strings.Repeat(story, 5) // about 1000 tokens
	rewrite := "Rewrite this text:\n" + long + "\nThe text again:\n" + story[:120]
	workloads := []struct{ name, prompt string }{
		{"rewrite", rewrite},
		{"free text", "Once upon a time, in a small town, a boy"},
	}
	for _, w := range workloads {
		promptTokens := len(tokenize(t, e, w.prompt))
		rates := map[string][]float64{}
		var stats llm.SpecStats
		for range 3 {
			for _, mode := range []string{llm.SpecOff, llm.SpecNgram} {
				req := &llm.Request{Prompt: w.prompt, AddSpecial: true, MaxTokens: n, IgnoreEOS: true,
					Sampling: llm.Sampling{Temperature: ptr(0.0)}, Speculative: &llm.Speculative{Mode: mode}}
				r := mustGenerate(t, e, req)
				rates[mode] = append(rates[mode], float64(r.done.Usage.CompletionTokens)/r.done.Timings.Decode.Seconds())
				if r.done.Spec != nil {
					stats = *r.done.Spec
				}
			}
		}
		plain, ngram := median(rates[llm.SpecOff]), median(rates[llm.SpecNgram])
		t.Logf("%s (%d prompt tokens, %d generated): plain %.1f tok/s, n-gram %.1f tok/s: %.2f×; drafts kept %d of %d",
			w.name, promptTokens, n, plain, ngram, ngram/plain, stats.Accepted, stats.Proposed)
	}
}

// median: flash_test.go's.
