package core

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/core/qos"
)

// ChatRequest is a conversation to complete, as any dialect describes it.
type ChatRequest struct {
	// ID names the request in records and replies (e.g. "chatcmpl-...").
	ID       string
	Endpoint string
	Stream   bool
	Model    string
	Messages []chat.Message
	// TemplateKwargs are extra chat template variables (chat_template_kwargs).
	TemplateKwargs map[string]any
	// Generation carries sampling, stops and caps; its Prompt is filled in by Chat when the
	// model runs prompts (a RequestEngine gets none: engine.go).
	Generation llm.Request
	// N is the number of choices; 0 means 1.
	N int
	// KeepAlive is how long the model stays loaded after this request (Ollama's keep_alive):
	// nil for the server's default, 0 to unload at once, negative to keep it loaded.
	KeepAlive *time.Duration
	// Tools are the functions the model may call; ToolChoice says whether it must.
	Tools      []chat.Tool
	ToolChoice ToolChoice
	// ParallelToolCalls false allows at most one call per reply; nil allows several.
	ParallelToolCalls *bool
	// QoS is the scheduling class (qos.go); unset takes the context's (WithScheduling), else
	// interactive. BatchInvariant asks for a lane that ticks alone.
	QoS            qos.Class
	BatchInvariant bool
}

// Result is the outcome of each choice, in choice order.
type Result struct {
	Model   *Model
	Choices []llm.Done
	// Adapters are the LoRA adapters the choices ran with (lora.go); nil for the bare model.
	Adapters []llm.AdapterRef
}

// Usage sums the choices' usage the OpenAI way: the prompt counted once.
func (r *Result) Usage() llm.Usage {
	var u llm.Usage
	for i, d := range r.Choices {
		if i == 0 {
			u.PromptTokens, u.CachedTokens = d.Usage.PromptTokens, d.Usage.CachedTokens
		}
		u.CompletionTokens += d.Usage.CompletionTokens
	}
	return u
}

// Emit receives the events of choice i. Calls are serialized. An error from Emit means the
// reply cannot be delivered (the client hung up or stopped reading): the generation stops and
// the request is recorded as a client disconnect.
type Emit func(choice int, ev llm.Event) error

// Chat generates N choices of the conversation, running them side by side on the engine's
// lanes: rendered with the model's chat template, or handed typed to the model's RequestEngine
// (engine.go). Every request is recorded, failed or not.
func (s *Service) Chat(ctx context.Context, req *ChatRequest, emit Emit) (*Result, error) {
	ctx = begin(ctx, Scheduling{req.QoS, req.BatchInvariant}, qos.Interactive, req.Stream)
	return s.serve(ctx, recordKey{req.ID, req.Endpoint, req.Model, req.Stream}, func(ctx context.Context, m *Model) (*Result, error) {
		return s.chat(ctx, m, req, emit)
	})
}

func (s *Service) chat(ctx context.Context, m *Model, req *ChatRequest, emit Emit) (*Result, error) {
	if err := checkTools(req); err != nil {
		return nil, err
	}
	msgs := withSystemPrompt(req.Messages, s.settingsOf(ctx, m).SystemPrompt)
	req, msgs, release, err := s.withMedia(ctx, m, req, msgs) // decoded, and marked in the text
	if err != nil {
		return nil, err
	}
	defer release()
	n := max(1, req.N)
	g, err := s.roadOf(m).chat(m, req, msgs, n, emit)
	if err != nil {
		return nil, err
	}
	return s.generate(ctx, m, g, n, req.KeepAlive)
}

// CompletionRequest is raw text to continue, with no chat template.
type CompletionRequest struct {
	ID       string
	Endpoint string
	Stream   bool
	Model    string
	// Generation carries the prompt (Prompt, or Tokens when the caller built token ids),
	// sampling, stops and caps. BOS is added as the model wants.
	Generation llm.Request
	N          int
	// KeepAlive: see ChatRequest.
	KeepAlive *time.Duration
	// QoS and BatchInvariant: see ChatRequest (the default class is interactive).
	QoS            qos.Class
	BatchInvariant bool
}

// Complete continues raw text (or token ids). Every request is recorded.
func (s *Service) Complete(ctx context.Context, req *CompletionRequest, emit Emit) (*Result, error) {
	ctx = begin(ctx, Scheduling{req.QoS, req.BatchInvariant}, qos.Interactive, req.Stream)
	return s.serve(ctx, recordKey{req.ID, req.Endpoint, req.Model, req.Stream}, func(ctx context.Context, m *Model) (*Result, error) {
		n := max(1, req.N)
		g, err := s.roadOf(m).complete(m, req, n, emit)
		if err != nil {
			return nil, err
		}
		return s.generate(ctx, m, g, n, req.KeepAlive)
	})
}

// CountTokens is the prompt length a conversation would have, chat template included.
func (s *Service) CountTokens(ctx context.Context, model string, msgs []chat.Message, kwargs map[string]any) (int, error) {
	return s.CountChatTokens(ctx, &ChatRequest{Model: model, Messages: msgs, TemplateKwargs: kwargs})
}

// CountChatTokens is the prompt length req would have: its messages, tools and template
// variables through the chat template (Anthropic's count_tokens).
func (s *Service) CountChatTokens(ctx context.Context, req *ChatRequest) (int, error) {
	m, err := s.ModelFor(ctx, req.Model)
	if err != nil {
		return 0, err
	}
	if err := checkTools(req); err != nil {
		return 0, err
	}
	msgs := withSystemPrompt(req.Messages, s.settingsOf(ctx, m).SystemPrompt) // as Chat renders it
	// Media the model cannot take is refused as Chat would; what it can take is not counted
	// (its positions are the projector's to say, once decoded and encoded).
	if parts := mediaParts(msgs); parts > 0 {
		if err := s.checkMedia(m, msgs, parts); err != nil {
			return 0, err
		}
	}
	prompt, err := s.render(m, msgs, req.TemplateKwargs, req.Tools)
	if err != nil {
		return 0, err
	}
	if err := checkTextLength(m, len(prompt)); err != nil {
		return 0, err
	}
	tokens, err := m.Engine.Tokenize(ctx, prompt, addSpecial(m, prompt), true)
	return len(tokens), err
}

// acquirer is an engine that loads its model on demand (a catalog model's handle).
type acquirer interface {
	Acquire(ctx context.Context) (llm.Engine, func(keepAlive *time.Duration), error)
}

// generate runs g's n choices side by side on m: admitted, settled and gated the same way
// whichever road readied it.
func (s *Service) generate(ctx context.Context, m *Model, g *generation, n int, keepAlive *time.Duration) (*Result, error) {
	if err := checkGenerates(m); err != nil {
		return nil, err
	}
	gen := &g.gen
	if g.check != nil {
		if err := g.check(gen); err != nil {
			return nil, err
		}
	}
	if s.cfg.IsolateCache {
		gen.CachePartition = fairOwner(ctx)
		gen.SharedPrefix = s.sharedPrefix(ctx, m, gen)
	}
	release, err := s.prepare(ctx, m, gen, n)
	if err != nil {
		return nil, err
	}
	defer release()
	admitted(ctx) // --nonstream-keepalive commits the reply's status here
	engine := m.Engine
	if a, ok := engine.(acquirer); ok {
		acquired, done, err := a.Acquire(ctx)
		if err != nil {
			return &Result{Model: m}, err
		}
		defer done(keepAlive)
		engine = acquired
	}
	grant, waited, err := s.grant(ctx, m, engine, gen, n)
	if err != nil {
		return &Result{Model: m}, err
	}
	defer grant()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	res := &Result{Model: m, Choices: make([]llm.Done, n), Adapters: gen.Adapters}
	lat := s.latencyOf(ctx, m) // nil without an observer
	errs := make([]error, n)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range n {
		choice := *gen
		if choice.Sampling.Seed != 0 {
			choice.Sampling.Seed += uint64(i) // distinct but reproducible choices
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var last time.Time // this choice's previous piece of text, for the observer
			errs[i] = g.run(ctx, engine, &choice, func(ev llm.Event) error {
				// Keep what is known as it arrives, so a failed or abandoned request is
				// recorded with the tokens it did use.
				partial := &res.Choices[i]
				switch {
				case ev.Done != nil:
					// Copied after emit: the reply's shaper may set the finish reason and a warning.
					defer func() { *partial = *ev.Done }()
				case ev.Started != nil:
					partial.Usage.PromptTokens, partial.Usage.CachedTokens, partial.Lane = ev.Started.PromptTokens, ev.Started.CachedTokens, ev.Started.Lane
				default:
					partial.Usage.CompletionTokens += ev.Tokens
					lat.piece(&last, ev.Tokens)
				}
				mu.Lock()
				defer mu.Unlock()
				return undelivered(g.emit(i, ev))
			})
			if errs[i] != nil {
				cancel() // one failed choice fails the request; stop the others
			}
		}()
	}
	wg.Wait()
	for i := range res.Choices {
		res.Choices[i].Timings.Queue += waited // the wait at the gate is queueing too
	}
	if err := firstRealError(errs); err != nil {
		return res, withoutAdapterPaths(err, m, gen.Adapters) // res partial: for the record only
	}
	return res, nil
}

// firstRealError prefers the error that caused a cancellation over the cancellations it caused.
func firstRealError(errs []error) error {
	var first error
	for _, err := range errs {
		if err == nil {
			continue
		}
		if !errors.Is(err, context.Canceled) {
			return err
		}
		if first == nil {
			first = err
		}
	}
	return first
}
