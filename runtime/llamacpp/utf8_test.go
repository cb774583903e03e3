package llamacpp

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/superfluid/superfluid/runtime/llm"
)

// A 32k vocabulary with random weights emits byte tokens and multi-byte pieces in every order;
// each event's text must still be whole UTF-8 characters.
func TestEventsAreValidUTF8(t *testing.T) {
	path := filepath.Join(sharedModels, "llama-2-tiny-random.gguf")
	if _, err := os.Stat(path); err != nil {
		t.Skipf("no %s: %v", path, err)
	}
	e, err := Load(Options{ModelPath: path, ContextLength: 512, Parallel: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if v := e.Info().VocabSize; v != 32000 {
		t.Fatalf("vocabulary of %d tokens, want 32000", v)
	}
	prompts := []string{"Hello", "日本語のテキスト", "Ünïcödé 😀 emoji", "Привет, мир"}
	var wg sync.WaitGroup
	errs := make(chan error, len(prompts)*2)
	for i, prompt := range prompts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, seed := range []uint64{uint64(i) + 1, uint64(i) + 100} {
				req := &llm.Request{Prompt: prompt, AddSpecial: true, MaxTokens: 200, IgnoreEOS: true,
					Sampling: llm.Sampling{Temperature: ptr(1.5), TopK: ptr(0), TopP: ptr(1.0), MinP: ptr(0.0), Seed: seed}}
				var events []llm.Event
				err := e.Generate(context.Background(), req, func(ev llm.Event) error {
					events = append(events, ev)
					return nil
				})
				if err == nil {
					err = checkEvents(events, 4) // checks every Text with utf8.ValidString
				}
				if err == nil && events[len(events)-1].Done.Usage.CompletionTokens != 200 {
					err = fmt.Errorf("%d completion tokens, want 200", events[len(events)-1].Done.Usage.CompletionTokens)
				}
				for _, ev := range events {
					if !utf8.ValidString(ev.Text) {
						err = fmt.Errorf("invalid UTF-8 %q", ev.Text)
					}
				}
				if err != nil {
					errs <- fmt.Errorf("prompt %q, seed %d: %w", prompt, seed, err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
