package llamacpp

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/runtime/llm"
)

// TestLoRABench measures what adapters cost, engine-direct, on the models LORA_BENCH names
// (comma-separated .gguf paths; the test skips without it):
//
//	LORA_BENCH=../../../shared/models/stories260K.gguf make gotest PKG='-v ./runtime/llamacpp' RUN=TestLoRABench
//
// Four lanes generate LORA_BENCH_TOKENS tokens each (default 128) at once, on
// LORA_BENCH_THREADS threads (default: the engine's choice): all bare, all with
// one adapter (one decode per tick, the adapter's extra products), and four different sets
// (bare, A, A at 0.5, B: four decodes per tick). It reports the total decode tokens/s, the
// median of 5 runs, the cases interleaved so that load from other processes falls on all alike.
func TestLoRABench(t *testing.T) {
	paths := os.Getenv("LORA_BENCH")
	if paths == "" {
		t.Skip("set LORA_BENCH to model paths to measure adapters")
	}
	tokens := atoiOr(os.Getenv("LORA_BENCH_TOKENS"), 128)
	threads := atoiOr(os.Getenv("LORA_BENCH_THREADS"), 0)
	for _, path := range strings.Split(paths, ",") {
		dir := t.TempDir()
		var files []string
		for i := range 2 {
			f := filepath.Join(dir, fmt.Sprintf("lora%d.gguf", i))
			if err := gguftest.WriteLoRA(f, path, gguftest.LoRAOptions{Seed: int64(i + 1)}); err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
		e, err := Load(Options{ModelPath: path, ContextLength: 1024, Parallel: 4, Threads: threads})
		if err != nil {
			t.Fatal(err)
		}
		a, half, b := adapter("a", files[0], 1), adapter("a", files[0], 0.5), adapter("b", files[1], 1)
		cases := []struct {
			name string
			sets [][]llm.AdapterRef
		}{
			{"bare", [][]llm.AdapterRef{nil, nil, nil, nil}},
			{"one adapter", [][]llm.AdapterRef{{a}, {a}, {a}, {a}}},
			{"four sets", [][]llm.AdapterRef{nil, {a}, {half}, {b}}},
		}
		rates := make([][]float64, len(cases))
		for range 5 {
			for i, c := range cases {
				rates[i] = append(rates[i], benchLanes(t, e, c.sets, tokens))
			}
		}
		t.Logf("%s, %d threads, 4 lanes × %d tokens:", filepath.Base(path), e.Info().Threads, tokens)
		for i, c := range cases {
			t.Logf("  %-12s %8.0f tok/s (median of 5; %.2f× bare)", c.name, median(rates[i]), median(rates[i])/median(rates[0]))
		}
		e.Close()
	}
}

// benchLanes runs one generation per set at once and returns the total tokens per second.
func benchLanes(t *testing.T, e *Engine, sets [][]llm.AdapterRef, tokens int) float64 {
	t.Helper()
	var wg sync.WaitGroup
	began := time.Now()
	for i, set := range sets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := withLoRA(fmt.Sprintf("Lane %d: once upon a time", i), tokens, set...)
			req.NoCache = true
			if err := e.Generate(context.Background(), req, func(llm.Event) error { return nil }); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	return float64(len(sets)*tokens) / time.Since(began).Seconds()
}
