package core

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/runtime/llm"
)

// countingEngine counts the texts and generations that reach the engine, and reports the
// vocabulary's longest token as told.
type countingEngine struct {
	*enginetest.Engine
	maxTokenBytes     int
	texts, generation atomic.Int64
}

func (c *countingEngine) Info() llm.ModelInfo {
	info := c.Engine.Info()
	info.MaxTokenBytes = c.maxTokenBytes
	return info
}

func (c *countingEngine) Tokenize(ctx context.Context, text string, addSpecial, parseSpecial bool) ([]int, error) {
	c.texts.Add(1)
	return c.Engine.Tokenize(ctx, text, addSpecial, parseSpecial)
}

func (c *countingEngine) Generate(ctx context.Context, req *llm.Request, emit func(llm.Event) error) error {
	c.generation.Add(1)
	return c.Engine.Generate(ctx, req, emit)
}

// TestTextLengthRefusedUntokenized: on every route that tokenizes, text longer than the window
// times twice the longest token (or the fallback bound before the vocabulary is known) is
// refused with a ContextLengthError before the engine sees it; text of the limit itself goes
// on to the engine.
func TestTextLengthRefusedUntokenized(t *testing.T) {
	const window = 256
	ctx := context.Background()
	drop := func(int, llm.Event) error { return nil }
	routes := []struct {
		name string
		// run sends text of n bytes (for chat: a rendered prompt of n bytes).
		run func(svc *Service, m *Model, n int) error
	}{
		{"chat", func(svc *Service, m *Model, n int) error {
			overhead := len(renderUser(t, svc, m, ""))
			_, err := svc.Chat(ctx, userChat(strings.Repeat("a", n-overhead)), drop)
			return err
		}},
		{"completion", func(svc *Service, m *Model, n int) error {
			_, err := svc.Complete(ctx, &CompletionRequest{Model: "fake", Generation: llm.Request{Prompt: strings.Repeat("a", n), MaxTokens: 1}}, drop)
			return err
		}},
		{"infill", func(svc *Service, m *Model, n int) error {
			_, err := svc.Infill(ctx, &InfillRequest{Model: "fake", Prefix: strings.Repeat("a", n/2), Suffix: strings.Repeat("b", n-n/2)}, drop)
			return err
		}},
		{"count tokens", func(svc *Service, m *Model, n int) error {
			overhead := len(renderUser(t, svc, m, ""))
			_, err := svc.CountTokens(ctx, "fake", []chat.Message{{Role: "user", Content: strings.Repeat("a", n-overhead)}}, nil)
			return err
		}},
		{"tokenize", func(svc *Service, m *Model, n int) error {
			_, err := svc.Tokenize(ctx, "fake", strings.Repeat("a", n), false)
			return err
		}},
	}
	for _, vocab := range []struct {
		name          string
		maxTokenBytes int
		limit         int
	}{
		{"known vocabulary", 5, window * 10},
		{"vocabulary not known yet", 0, window * fallbackBytesPerToken},
	} {
		for _, r := range routes {
			t.Run(vocab.name+"/"+r.name, func(t *testing.T) {
				engine := &countingEngine{Engine: enginetest.New(window, "ok"), maxTokenBytes: vocab.maxTokenBytes}
				m := fakeModel(t, engine)
				m.FIM = &FIMTokens{Prefix: 300, Suffix: 301, Middle: 302}
				svc := New(Config{}, nil, m)

				err := r.run(svc, m, vocab.limit+1)
				var cl *llm.ContextLengthError
				if !errors.As(err, &cl) || cl.Bytes != vocab.limit+1 || cl.ContextLength != window ||
					cl.PromptTokens <= window || statusOf(err) != 400 {
					t.Fatalf("text of %d bytes (limit %d): %v; want a ContextLengthError naming the bytes", vocab.limit+1, vocab.limit, err)
				}
				if n := engine.texts.Load() + engine.generation.Load(); n != 0 {
					t.Fatalf("the refused text reached the engine (%d calls)", n)
				}

				err = r.run(svc, m, vocab.limit)
				if engine.texts.Load()+engine.generation.Load() == 0 {
					t.Fatalf("text of the limit (%d bytes) never reached the engine: %v", vocab.limit, err)
				}
				if errors.As(err, &cl) && cl.Bytes != 0 {
					t.Fatalf("text of the limit (%d bytes) was refused by its length: %v", vocab.limit, err)
				}
			})
		}
	}
}

func renderUser(t *testing.T, svc *Service, m *Model, text string) string {
	t.Helper()
	prompt, err := svc.Prompt(m, []chat.Message{{Role: "user", Content: text}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return prompt
}
