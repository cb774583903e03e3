package llamacpp

import (
	"context"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/ml"

	"github.com/superfluid/superfluid/runtime/llm"
)

func TestFlashAttentionSetting(t *testing.T) {
	for _, c := range []struct {
		setting     string
		gpu, embeds bool
		on          bool
	}{
		{"on", false, false, true},
		{"off", false, false, false},
		{"off", true, false, false},
		{"", false, false, false},
		{"auto", false, false, false},
		{"auto", true, false, true},
		{"", true, false, true},
		{"auto", true, true, false},
		{"on", false, true, true},
	} {
		got, on, err := flashAttentionFor(c.setting, c.gpu, c.embeds)
		if err != nil || on != c.on || (c.on && got != ml.FlashAttentionEnabled) || (!c.on && got != ml.FlashAttentionDisabled) {
			t.Errorf("flashAttentionFor(%q, gpu %v, embeds %v) = %v, %v, %v; want on %v", c.setting, c.gpu, c.embeds, got, on, err, c.on)
		}
	}
	if _, _, err := flashAttentionFor("yes", false, false); err == nil || !strings.Contains(err.Error(), `"yes"`) {
		t.Errorf("flashAttentionFor(yes): %v, want an error naming the value", err)
	}
	e, err := Load(Options{ModelPath: testModelPath, ContextLength: 64, Parallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.Info().FlashAttention {
		t.Error("the CPU runs flash attention under auto")
	}
}

// TestFlashAttentionLoad loads the test model with each setting: Info says which runs, both
// generate, and a bad setting fails the load with a message naming it.
func TestFlashAttentionLoad(t *testing.T) {
	if _, err := Load(Options{ModelPath: testModelPath, ContextLength: 64, Parallel: 1, FlashAttention: "sometimes"}); err == nil ||
		!strings.Contains(err.Error(), "sometimes") {
		t.Fatalf("Load with flash attention %q: %v, want an error naming it", "sometimes", err)
	}
	texts := map[string]string{}
	for _, setting := range []string{FlashOn, FlashOff} {
		e, err := Load(Options{ModelPath: testModelPath, ContextLength: 128, Parallel: 1, FlashAttention: setting})
		if err != nil {
			t.Fatal(err)
		}
		if got := e.Info().FlashAttention; got != (setting == FlashOn) {
			t.Errorf("flash attention %s: Info().FlashAttention = %v", setting, got)
		}
		r := mustGenerate(t, e, greedy("Once upon a time", 16))
		if r.done.Usage.CompletionTokens == 0 {
			t.Errorf("flash attention %s: no tokens generated", setting)
		}
		texts[setting] = r.text
		e.Close()
	}
	t.Logf("greedy text with flash attention on %q, off %q", texts[FlashOn], texts[FlashOff])
}

// TestFlashAttentionSpeed measures prefill (512 and 2,000-token prompts) and single-stream
// decode with flash attention on and off, through the engine, on the models named in
// SUPERFLUID_FLASH_BENCH (comma-separated .gguf paths; "test" is the test model). Both engines
// are loaded at once and their runs interleave, so drift on a shared machine hits both alike.
// SUPERFLUID_FLASH_REPEAT sets the runs (default 5).
func TestFlashAttentionSpeed(t *testing.T) {
	list := os.Getenv("SUPERFLUID_FLASH_BENCH")
	if list == "" {
		t.Skip("set SUPERFLUID_FLASH_BENCH to model paths to measure flash attention on and off")
	}
	repeat := 5
	if n := os.Getenv("SUPERFLUID_FLASH_REPEAT"); n != "" {
		if v, err := strconv.Atoi(n); err == nil && v > 0 {
			repeat = v
		}
	}
	// SUPERFLUID_FLASH_PROMPTS: the prefill sizes (default 512,2000).
	sizes := []int{512, 2000}
	if v := os.Getenv("SUPERFLUID_FLASH_PROMPTS"); v != "" {
		sizes = nil
		for _, f := range strings.Split(v, ",") {
			if n, err := strconv.Atoi(f); err == nil && n > 0 {
				sizes = append(sizes, n)
			}
		}
	}
	for _, path := range strings.Split(list, ",") {
		if path == "test" {
			path = testModelPath
		}
		engines := map[string]*Engine{}
		for _, setting := range []string{FlashOff, FlashOn} {
			e, err := Load(Options{ModelPath: path, ContextLength: 2048, Parallel: 1, FlashAttention: setting})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			engines[setting] = e
		}
		info := engines[FlashOn].Info()
		window := info.ContextLength
		rates := map[string][]float64{}
		rng := rand.New(rand.NewPCG(1, 2))
		for run := range repeat {
			for _, setting := range []string{FlashOff, FlashOn} {
				e := engines[setting]
				for _, n := range sizes {
					n = min(n, window-2)
					// Random tokens: a fresh first token each run, so no prefix is cached.
					prompt := make([]int, n)
					for i := range prompt {
						prompt[i] = 3 + rng.IntN(info.VocabSize-3)
					}
					s := timeGeneration(t, e, &llm.Request{Tokens: prompt, MaxTokens: 1, IgnoreEOS: true, Sampling: llm.Sampling{Temperature: ptr(0.0)}})
					rates[setting+" prefill "+strconv.Itoa(n)] = append(rates[setting+" prefill "+strconv.Itoa(n)], float64(n)/s.first.Seconds())
				}
				decode := 64
				s := timeGeneration(t, e, &llm.Request{Tokens: []int{3 + run, 10, 20, 30}, MaxTokens: decode, IgnoreEOS: true, Sampling: llm.Sampling{Temperature: ptr(0.0)}})
				rates[setting+" decode"] = append(rates[setting+" decode"], s.decodeRate())
				// Each run as it ends: a long measurement on a busy machine shows its progress.
				t.Logf("run %d, flash attention %s: decode %.1f tok/s", run+1, setting, s.decodeRate())
			}
		}
		t.Logf("%s (%s, %d threads, %d runs each, medians [min-max] tok/s)", path, info.Architecture, info.Threads, repeat)
		var phases []string
		for _, n := range sizes {
			phases = append(phases, "prefill "+strconv.Itoa(min(n, window-2)))
		}
		for _, phase := range append(phases, "decode") {
			off, on := rates[FlashOff+" "+phase], rates[FlashOn+" "+phase]
			t.Logf("  %-13s off %7.1f [%6.1f-%6.1f]  on %7.1f [%6.1f-%6.1f]  on/off %.3f", phase,
				median(off), slices.Min(off), slices.Max(off), median(on), slices.Min(on), slices.Max(on), median(on)/median(off))
		}
	}
}

// timing is one generation timed through the engine: the time to the first token (the
// prefill) and the decode after it.
type timing struct {
	first, last time.Duration
	tokens      int
	firstTokens int
}

func (s timing) decodeRate() float64 {
	if s.tokens-s.firstTokens < 1 || s.last <= s.first {
		return 0
	}
	return float64(s.tokens-s.firstTokens) / (s.last - s.first).Seconds()
}

func timeGeneration(t *testing.T, e *Engine, req *llm.Request) timing {
	t.Helper()
	var s timing
	start := time.Now()
	err := e.Generate(context.Background(), req, func(ev llm.Event) error {
		if ev.Tokens > 0 {
			if s.firstTokens == 0 {
				s.first, s.firstTokens = time.Since(start), ev.Tokens
			}
			s.last = time.Since(start)
			s.tokens += ev.Tokens
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
