package core

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/schema"
	"github.com/superfluid/superfluid/server/core/qos"
	"github.com/superfluid/superfluid/server/store"
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
	// Generation carries sampling, stops and caps; its Prompt is filled in by Chat.
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

// Chat renders the conversation and generates N choices, running them side by side on the
// engine's lanes. Every request is recorded, failed or not.
func (s *Service) Chat(ctx context.Context, req *ChatRequest, emit Emit) (*Result, error) {
	s.running.Add(1)
	defer s.running.Done()
	start := time.Now()
	ctx = withStart(ctx, start)
	ctx = begin(ctx, Scheduling{req.QoS, req.BatchInvariant}, qos.Interactive, req.Stream)
	m, err := s.ModelFor(ctx, req.Model)
	var res *Result
	if err == nil {
		res, err = s.chat(ctx, m, req, emit)
	}
	s.record(ctx, recordKey{req.ID, req.Endpoint, req.Model, req.Stream}, res, err, start)
	if err != nil {
		return nil, err
	}
	return res, nil
}

func (s *Service) chat(ctx context.Context, m *Model, req *ChatRequest, emit Emit) (*Result, error) {
	if err := checkTools(req); err != nil {
		return nil, err
	}
	msgs := withSystemPrompt(req.Messages, s.settingsOf(ctx, m).SystemPrompt)
	prompt, err := s.render(m, msgs, req.TemplateKwargs, req.Tools)
	if err != nil {
		return nil, err
	}
	gen := req.Generation
	gen.ID, gen.Prompt, gen.AddSpecial = req.ID, prompt, addSpecial(m, prompt)
	n := max(1, req.N)
	var check *outputCheck
	if req.ToolChoice.forced() {
		// The forced call's grammar wins over a response format, as the official APIs do: the
		// format applies to the text reply of a later turn.
		check, err = forceCall(&gen, req, n)
	} else if gen.Format == llm.FormatSchema && len(req.Tools) > 0 && req.ToolChoice.Mode != ToolNone {
		check, err = formatOrCall(&gen, req, n)
	} else {
		check, err = checkFormat(&gen, n)
	}
	if err != nil {
		return nil, err
	}
	sh := shapingFor(m, req, prompt)
	shapers := make([]*replyShaper, n)
	for i := range shapers {
		shapers[i] = sh.newShaper()
	}
	return s.generate(ctx, m, &gen, n, req.KeepAlive, check.wrap(func(i int, ev llm.Event) error {
		shapers[i].shape(&ev)
		return emit(i, ev)
	}))
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
	s.running.Add(1)
	defer s.running.Done()
	start := time.Now()
	ctx = withStart(ctx, start)
	ctx = begin(ctx, Scheduling{req.QoS, req.BatchInvariant}, qos.Interactive, req.Stream)
	m, err := s.ModelFor(ctx, req.Model)
	var res *Result
	if err == nil {
		gen := req.Generation
		gen.ID, gen.AddSpecial = req.ID, len(gen.Tokens) == 0
		var check *outputCheck
		if check, err = checkFormat(&gen, max(1, req.N)); err == nil {
			res, err = s.generate(ctx, m, &gen, max(1, req.N), req.KeepAlive, check.wrap(emit))
		}
	}
	s.record(ctx, recordKey{req.ID, req.Endpoint, req.Model, req.Stream}, res, err, start)
	if err != nil {
		return nil, err
	}
	return res, nil
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

func (s *Service) generate(ctx context.Context, m *Model, gen *llm.Request, n int, keepAlive *time.Duration, emit Emit) (*Result, error) {
	if err := checkGenerates(m); err != nil {
		return nil, err
	}
	if err := checkTextLength(m, len(gen.Prompt)); err != nil {
		return nil, err // before the worker tokenizes it (see limits.go)
	}
	if gen.Format == llm.FormatSchema {
		// Before the worker compiles it: llama.cpp's converter aborts or loops on hostile schemas,
		// and fails on limits it cannot express. Callers that check the output against what was
		// relaxed (checkFormat, forceCall) have relaxed it already.
		g, _, err := schema.Grammar(gen.Schema)
		if err != nil {
			return nil, err
		}
		gen.Schema = g
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
	res := &Result{Model: m, Choices: make([]llm.Done, n)}
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
			errs[i] = engine.Generate(ctx, &choice, func(ev llm.Event) error {
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
				return undelivered(emit(i, ev))
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
		return res, err // partial: for the record only
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

// recordKey is what every request record starts from.
type recordKey struct {
	id, endpoint, model string
	stream              bool
}

func (s *Service) record(ctx context.Context, key recordKey, res *Result, err error, start time.Time) {
	s.observeTokens(res)
	meterTokens(ctx, res)
	if s.store == nil {
		return
	}
	rec := store.RequestRecord{
		ID: key.id, Model: key.model, Endpoint: key.endpoint, Stream: key.stream,
		Status: statusOf(err), Total: time.Since(start), CreatedAt: start,
		ClientDisconnected: errors.Is(err, context.Canceled) || ctx.Err() != nil,
	}
	rec.KeyID, rec.KeyName = keyOf(ctx)
	if err != nil {
		rec.Error = err.Error()
	}
	if res != nil {
		rec.Model = res.Model.ID
		u := res.Usage()
		rec.PromptTokens, rec.CompletionTokens, rec.CachedTokens = u.PromptTokens, u.CompletionTokens, u.CachedTokens
		if len(res.Choices) > 0 {
			d := res.Choices[0]
			rec.FinishReason, rec.Lane, rec.Warning = d.FinishReason, d.Lane, d.Warning
			rec.Queue, rec.Prefill, rec.Decode = d.Timings.Queue, d.Timings.Prefill, d.Timings.Decode
		}
	}
	// Queued, not written: the reply never waits for the disk. A full queue drops the record
	// (the store counts and logs it) rather than hold the reply.
	s.store.Record(rec)
}
