package enginetest

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/superfluid/superfluid/runtime/llm"
)

// Scripted is a model whose replies the test writes: each generation's text is Script of the
// request (its rendered prompt), streamed by the fake (one token per byte, the same stop,
// window and sampler checks). It is also a runner the model manager can serve (Start, Unload,
// Loaded, Slots), so a test can put it behind the whole server: dialect, chat template,
// tool-call parser and streaming are the real ones; only the engine is scripted.
type Scripted struct {
	// Script returns the text the model answers req with.
	Script func(req *llm.Request) string

	info   llm.ModelInfo
	loaded atomic.Bool

	mu       sync.Mutex
	requests []llm.Request
}

// NewScripted returns a scripted model with a window of ctx tokens (bytes).
func NewScripted(ctx int, script func(req *llm.Request) string) *Scripted {
	info := New(ctx, "").Info()
	info.Path, info.Architecture, info.Runtime = "scripted.gguf", "scripted", "scripted"
	return &Scripted{Script: script, info: info}
}

// Info describes the scripted model.
func (s *Scripted) Info() llm.ModelInfo { return s.info }

// Tokenize is the fake's: one token per byte, BOS first when addSpecial.
func (s *Scripted) Tokenize(ctx context.Context, text string, addSpecial, parseSpecial bool) ([]int, error) {
	return New(s.info.ContextLength, "").Tokenize(ctx, text, addSpecial, parseSpecial)
}

// Generate streams Script(req) as the fake streams its Reply.
func (s *Scripted) Generate(ctx context.Context, req *llm.Request, emit func(llm.Event) error) error {
	s.mu.Lock()
	s.requests = append(s.requests, *req)
	s.mu.Unlock()
	return New(s.info.ContextLength, s.Script(req)).Generate(ctx, req, emit)
}

// Requests returns the requests Generate has seen, in order.
func (s *Scripted) Requests() []llm.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]llm.Request(nil), s.requests...)
}

// Start loads the model (nothing to load).
func (s *Scripted) Start(context.Context) error {
	s.loaded.Store(true)
	return nil
}

// Unload frees it.
func (s *Scripted) Unload(context.Context) error {
	s.loaded.Store(false)
	return nil
}

// Loaded reports whether the model is loaded.
func (s *Scripted) Loaded() bool { return s.loaded.Load() }

// Slots is an empty snapshot: the scripted model has no lanes to show.
func (s *Scripted) Slots(context.Context) (llm.Slots, error) { return llm.Slots{}, nil }

// Close does nothing.
func (s *Scripted) Close() error { return nil }
