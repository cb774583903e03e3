package llamacpp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/superfluid/superfluid/runtime/llm"
)

func TestCancelFreesTheLane(t *testing.T) {
	const prompt = "Cancel test. The little girl walked home with her mom"
	req := greedy(prompt, 0) // fill the context: far longer than the cancellation takes
	req.IgnoreEOS = true
	var err error
	texts := 0
	// The generation may, on a stalled machine, finish before the cancellation lands; try again.
	for attempt := 0; attempt < 5; attempt++ {
		ctx, cancel := context.WithCancel(context.Background())
		texts = 0
		err = testEngine.Generate(ctx, req, func(ev llm.Event) error {
			if ev.Text != "" {
				if texts++; texts == 1 {
					cancel()
				}
			}
			return nil
		})
		cancel()
		if err != nil {
			break
		}
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Generate = %v, want context.Canceled", err)
	}
	// The lane is free, and its cache matches its KV entries: the same prompt reuses it.
	r := mustGenerate(t, testEngine, greedy(prompt, 5))
	if got, want := r.done.Usage.CachedTokens, r.done.Usage.PromptTokens-1; got != want {
		t.Errorf("after cancelling: cached %d, want %d", got, want)
	}
	runOnEveryLane(t, testEngine, "after cancel")
}

func TestEmitErrorStopsTheGeneration(t *testing.T) {
	const prompt = "Emit error test. The sun was bright"
	errStop := errors.New("client went away")
	req := greedy(prompt, 0)
	req.IgnoreEOS = true
	err := testEngine.Generate(context.Background(), req, func(ev llm.Event) error {
		if ev.Text != "" {
			return errStop
		}
		return nil
	})
	if !errors.Is(err, errStop) {
		t.Fatalf("Generate = %v, want the emit error", err)
	}
	r := mustGenerate(t, testEngine, greedy(prompt, 5))
	if got, want := r.done.Usage.CachedTokens, r.done.Usage.PromptTokens-1; got != want {
		t.Errorf("after the emit error: cached %d, want %d", got, want)
	}
	runOnEveryLane(t, testEngine, "after an emit error")
}

// runOnEveryLane runs one short request per lane at once; all must complete.
func runOnEveryLane(t *testing.T, e *Engine, name string) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, e.Info().Parallel)
	for i := range e.Info().Parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := &llm.Request{Prompt: fmt.Sprintf("%s, lane check %d", name, i), AddSpecial: true, MaxTokens: 8, IgnoreEOS: true}
			var events []llm.Event
			err := e.Generate(context.Background(), req, func(ev llm.Event) error {
				events = append(events, ev)
				return nil
			})
			if err == nil {
				err = checkEvents(events, e.Info().Parallel)
			}
			if err == nil && events[len(events)-1].Done.Usage.CompletionTokens != 8 {
				err = fmt.Errorf("%d completion tokens, want 8", events[len(events)-1].Done.Usage.CompletionTokens)
			}
			if err != nil {
				errs <- fmt.Errorf("%s, request %d: %w", name, i, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// A small batch splits long prompts into chunks, interleaved with the other lane's decoding;
// the output is the same as with one big batch.
func TestChunkedPrefill(t *testing.T) {
	e, err := Load(Options{ModelPath: testModelPath, ContextLength: 256, Parallel: 2, BatchSize: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	prompts := []string{
		"Chunk test one. Once upon a time, there was a little girl named Lily. She loved to play outside with her friends in the park near her house",
		"Chunk test two. Tom and his dog went to the beach. They saw a big crab and a shell and they ran and ran until the sun went down",
		"Chunk test three. The old man had a small boat. Every morning he went out on the lake to catch fish for his family and friends",
		"Chunk test four. Sue found a shiny key under a rock in the garden. She wondered what door it could open, so she asked her mom",
	}
	want := make([]string, len(prompts))
	for i, p := range prompts {
		req := greedy(p, 20)
		req.IgnoreEOS = true
		if n := len(tokenize(t, e, p)); n <= 2*16 {
			t.Fatalf("prompt %d is %d tokens, want several batches", i, n)
		}
		want[i] = mustGenerate(t, testEngine, req).text
	}
	for i, p := range prompts[:2] {
		req := greedy(p, 20)
		req.IgnoreEOS = true
		if got := mustGenerate(t, e, req).text; got != want[i] {
			t.Errorf("prompt %d with batch 16: %q, with batch 512: %q", i, got, want[i])
		}
	}
	// The other two at once, new to this engine: one lane prefills in chunks while the other
	// decodes.
	var wg sync.WaitGroup
	got := make([]string, len(prompts))
	for i := 2; i < len(prompts); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := greedy(prompts[i], 20)
			req.IgnoreEOS = true
			r, err := generate(t, e, req)
			if err != nil {
				t.Errorf("prompt %d: %v", i, err)
			}
			if r.done.Usage.PromptTokens-r.done.Usage.CachedTokens <= 16 {
				t.Errorf("prompt %d: usage %+v, want more than one batch to prefill", i, r.done.Usage)
			}
			got[i] = r.text
		}()
	}
	wg.Wait()
	for i := 2; i < len(prompts); i++ {
		if got[i] != want[i] {
			t.Errorf("prompt %d concurrently with batch 16: %q, with batch 512: %q", i, got[i], want[i])
		}
	}
}

func TestLoadErrors(t *testing.T) {
	if _, err := Load(Options{ModelPath: filepath.Join(t.TempDir(), "missing.gguf")}); err == nil {
		t.Error("Load of a missing file succeeded")
	}
	bad := filepath.Join(t.TempDir(), "bad.gguf")
	if err := os.WriteFile(bad, []byte("GGUF but not really"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(Options{ModelPath: bad}); err == nil {
		t.Error("Load of a garbage file succeeded")
	}
}

func TestClosedEngine(t *testing.T) {
	e, err := Load(Options{ModelPath: testModelPath, ContextLength: 64, Parallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	mustGenerate(t, e, greedy("Close test", 3))
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	if _, err := generate(t, e, greedy("Close test", 3)); !errors.Is(err, llm.ErrEngineFailure) {
		t.Errorf("Generate after Close = %v, want llm.ErrEngineFailure", err)
	}
	if _, err := e.Tokenize(context.Background(), "Close test", true, true); !errors.Is(err, llm.ErrEngineFailure) {
		t.Errorf("Tokenize after Close = %v, want llm.ErrEngineFailure", err)
	}
}
