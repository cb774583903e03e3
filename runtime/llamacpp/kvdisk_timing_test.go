package llamacpp

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/runtime/llm"
)

// TestKVRestoreTiming measures the time to first token of a 2,000-token prompt on a freshly
// loaded engine, cold and then restored from the prefix the engine before it saved, and the
// saved file's size. It runs only when SUPERFLUID_KV_TIMING names a model: "stories" for the
// tests' model, or a path (a TinyLlama-1.1B-shaped Q8_0 model, as bench.WriteModel makes, is
// written there when missing). SUPERFLUID_KV_TIMING_REPS repeats it (default 3; medians).
func TestKVRestoreTiming(t *testing.T) {
	path := os.Getenv("SUPERFLUID_KV_TIMING")
	if path == "" {
		t.Skip("set SUPERFLUID_KV_TIMING to measure")
	}
	if path == "stories" {
		path = testModelPath
	} else if _, err := os.Stat(path); err != nil {
		err := gguftest.WriteTinyLlama(path, gguftest.TinyLlamaOptions{
			Vocab: 32000, Embd: 2048, Layers: 22, Heads: 32, KVHeads: 4, FF: 5632, ContextLength: 2048,
			Q8: true, Name: "TinyLlama-1.1B-shape-random",
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	reps, _ := strconv.Atoi(os.Getenv("SUPERFLUID_KV_TIMING_REPS"))
	reps = max(reps, 1)
	const n = 2000
	var cold, warm []time.Duration
	var bytesPer1K float64
	for rep := range reps {
		dir := t.TempDir()
		load := func() *Engine {
			e, err := Load(Options{ModelPath: path, ContextLength: 2048, Parallel: 1, KVDir: dir})
			if err != nil {
				t.Fatal(err)
			}
			return e
		}
		e := load()
		vocab := e.Info().VocabSize
		prompt := make([]int, n)
		for i := range prompt {
			prompt[i] = 3 + (i*7919+rep)%(vocab-3)
		}
		ttft := func(r result) time.Duration { return r.done.Timings.Queue + r.done.Timings.Prefill }
		req := func(tokens []int) *llm.Request {
			return &llm.Request{Tokens: tokens, MaxTokens: 1, Sampling: llm.Sampling{Temperature: ptr(0.0)}}
		}
		// A fresh process first pages the weights in; that costs cold and restored alike, so
		// one short request takes it before each measured one.
		warmUp := func(e *Engine) { mustGenerate(t, e, req([]int{1, 5})) }
		warmUp(e)
		c := mustGenerate(t, e, req(prompt))
		e.Close()
		files := kvFiles(t, dir, false)
		if len(files) != 1 {
			t.Fatalf("saved %v", files)
		}
		st, err := os.Stat(filepath.Join(dir, files[0]))
		if err != nil {
			t.Fatal(err)
		}
		bytesPer1K = float64(st.Size()) / float64(n) * 1000
		e = load()
		warmUp(e)
		w := mustGenerate(t, e, req(append(slices.Clone(prompt), 5, 6, 7, 8)))
		e.Close()
		if w.started.RestoredTokens < n {
			t.Fatalf("restored %d of %d tokens", w.started.RestoredTokens, n)
		}
		cold, warm = append(cold, ttft(c)), append(warm, ttft(w))
		t.Logf("rep %d: cold %v, restored %v (%.1f%%)", rep, ttft(c), ttft(w), 100*ttft(w).Seconds()/ttft(c).Seconds())
	}
	slices.Sort(cold)
	slices.Sort(warm)
	mc, mw := cold[len(cold)/2], warm[len(warm)/2]
	t.Logf("%s: TTFT of a %d-token prompt, median of %d: cold %v, restored after a reload %v (%.1f%% of cold); %.1f MB saved per 1,000 tokens",
		filepath.Base(path), n, reps, mc, mw, 100*mw.Seconds()/mc.Seconds(), bytesPer1K/1e6)
}
