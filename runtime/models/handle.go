package models

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/superfluid/superfluid/runtime/llm"
)

// Handle is a catalog model's engine: generations load the model on demand and keep it loaded
// for the keep-alive after the last one ends. It implements llm.Engine.
type Handle struct {
	m     *Manager
	entry *Entry
	s     *slot
}

// Entry is the catalog entry the handle serves.
func (h *Handle) Entry() *Entry { return h.entry }

// Info describes the model: the worker's view when loaded, else what the GGUF header says.
func (h *Handle) Info() llm.ModelInfo {
	h.m.mu.Lock()
	r, loaded := h.s.runner, h.s.state == StateLoaded
	h.m.mu.Unlock()
	if loaded {
		if info := r.Info(); info.ContextLength > 0 {
			return info
		}
	}
	e := h.entry
	return llm.ModelInfo{
		Path: e.Path, Architecture: e.Facts.Architecture, ContextLength: h.m.contextLength(e),
		TrainContextLength: e.Facts.ContextLength, Parallel: max(1, h.m.lanes(e)),
		// What its next load runs on.
		Runtime:   "llamacpp-" + cmp.Or(h.m.Settings(e.ID).Runtime, "cpu"),
		Embedding: e.Facts.Embedding,
	}
}

// Loaded reports whether the model is loaded.
func (h *Handle) Loaded() bool {
	h.m.mu.Lock()
	defer h.m.mu.Unlock()
	return h.s.state == StateLoaded
}

// Start loads the model (an explicit load: it ignores the backoff of failed loads).
func (h *Handle) Start(ctx context.Context) error {
	_, err := h.m.Load(ctx, h.entry.ID)
	return err
}

// Acquire loads the model if needed and returns its engine for one request; release ends the
// request and starts the keep-alive (nil: the default; 0: unload now; negative: never).
func (h *Handle) Acquire(ctx context.Context) (llm.Engine, func(keepAlive *time.Duration), error) {
	if h.entry.Err != nil {
		return nil, nil, fmt.Errorf("%w: the model %s cannot be used: %v", llm.ErrEngineFailure, h.entry.ID, withoutPaths(h.entry.Err, h.entry.Path, h.m.cat.Dir()))
	}
	r, live, err := h.m.acquire(ctx, h.entry.ID, h.s, false)
	if err != nil {
		return nil, nil, err
	}
	h.m.cat.Touch(h.entry.ID, time.Now())
	return lease{h: h, runner: r, live: live}, func(ka *time.Duration) { h.m.release(h.s, ka) }, nil
}

// Generate runs one generation, loading the model first when needed.
func (h *Handle) Generate(ctx context.Context, req *llm.Request, emit func(llm.Event) error) error {
	eng, release, err := h.Acquire(ctx)
	if err != nil {
		return err
	}
	defer release(nil)
	return eng.Generate(ctx, req, emit)
}

// Tokenize uses the loaded worker, or a tokenizer-only worker when the model is not loaded, so
// counting tokens never loads the weights.
func (h *Handle) Tokenize(ctx context.Context, text string, addSpecial, parseSpecial bool) ([]int, error) {
	for {
		ids, retired, err := h.tokenize(ctx, text, addSpecial, parseSpecial)
		if !retired {
			return ids, err
		}
		// The load finished while this call was on the tokenizer-only worker, which is retired
		// once the model is up: ask the loaded model instead.
	}
}

// tokenize is one try of Tokenize; retired reports that it ran on a tokenizer-only worker
// retired meanwhile (its error is then the retirement's, not the text's).
func (h *Handle) tokenize(ctx context.Context, text string, addSpecial, parseSpecial bool) (ids []int, retired bool, err error) {
	m, s := h.m, h.s
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, false, ErrClosed
	}
	if s.removed {
		// Its slot is gone from the manager: a tokenizer made for it now would be a worker
		// that nothing closes.
		m.mu.Unlock()
		return nil, false, fmt.Errorf("%w: the model %q was deleted", llm.ErrModelNotFound, h.entry.ID)
	}
	if s.state != StateLoaded {
		if s.vocab == nil {
			if err := m.gate.check(h.entry.ID); err != nil { // it would open the model file
				m.mu.Unlock()
				return nil, false, err
			}
			s.vocab = m.cfg.NewRunner(h.entry, true)
		}
		r := s.vocab
		m.mu.Unlock()
		ids, err := r.Tokenize(ctx, text, addSpecial, parseSpecial)
		if err != nil && ctx.Err() == nil {
			m.mu.Lock()
			retired = s.vocab != r && !m.closed && !s.removed
			m.mu.Unlock()
		}
		return ids, retired, err
	}
	s.inflight++ // an unload waits for it; the keep-alive restarts as it was
	s.stopTimer()
	l := lease{h: h, runner: s.runner, live: s.live}
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		m.releaseLocked(s)
		m.mu.Unlock()
	}()
	ids, err = l.Tokenize(ctx, text, addSpecial, parseSpecial)
	return ids, false, err
}

// Slots is the loaded worker's lane snapshot; a model that is not loaded has none. It does not
// count as a use of the model (a /slots poll keeps no model loaded).
func (h *Handle) Slots(ctx context.Context) (llm.Slots, error) {
	m, s := h.m, h.s
	m.mu.Lock()
	if s.state != StateLoaded {
		m.mu.Unlock()
		return llm.Slots{}, nil
	}
	l := lease{h: h, runner: s.runner, live: s.live}
	m.mu.Unlock()
	var slots llm.Slots
	err := l.call(ctx, func(ctx context.Context) (err error) {
		slots, err = l.runner.Slots(ctx)
		return err
	})
	return slots, err
}

// ReleaseAdapter asks the loaded worker to free the LoRA adapter at path (llm.AdapterReleaser);
// a model that is not loaded holds none, and a worker that keeps no adapters has nothing to
// free.
func (h *Handle) ReleaseAdapter(ctx context.Context, path string) error {
	m, s := h.m, h.s
	m.mu.Lock()
	if s.state != StateLoaded {
		m.mu.Unlock()
		return nil
	}
	l := lease{h: h, runner: s.runner, live: s.live}
	m.mu.Unlock()
	releaser, ok := l.runner.(llm.AdapterReleaser)
	if !ok {
		return nil
	}
	return l.call(ctx, func(ctx context.Context) error { return releaser.ReleaseAdapter(ctx, path) })
}

// Embed embeds, loading the model first when needed.
func (h *Handle) Embed(ctx context.Context, req *llm.EmbedRequest) (*llm.EmbedResult, error) {
	eng, release, err := h.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer release(nil)
	return eng.(llm.Embedder).Embed(ctx, req)
}

// Close does nothing: the manager owns the worker.
func (h *Handle) Close() error { return nil }

// lease is the engine of an acquired model: generations go to the worker that was loaded when
// the model was acquired, and a prompt that kills the worker twice, with no run to the end
// between, is refused afterwards instead of killing it again (SDKs retry 5xx).
type lease struct {
	h      *Handle
	runner Runner
	// live ends when that worker is unloaded: calls on it stop, later ones are refused.
	live context.Context
}

// call runs fn on the lease's worker, unless it was unloaded; fn's context also ends when an
// unload cuts the worker. A call cut or refused that way fails with ErrUnloaded.
func (l lease) call(ctx context.Context, fn func(ctx context.Context) error) error {
	m, s := l.h.m, l.h.s
	m.mu.Lock()
	if l.live.Err() != nil {
		m.mu.Unlock()
		return l.unloaded()
	}
	s.calls++
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		s.calls--
		s.wakeLocked()
		m.mu.Unlock()
	}()
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(l.live, func() { cancel(ErrUnloaded) })
	defer stop()
	err := fn(cctx)
	if err != nil && ctx.Err() == nil && l.live.Err() != nil {
		return l.unloaded()
	}
	return err
}

func (l lease) unloaded() error {
	return fmt.Errorf("%w before this request finished (the model %s); send it again", ErrUnloaded, l.h.entry.ID)
}

func (l lease) Info() llm.ModelInfo { return l.h.Info() }
func (l lease) Close() error        { return nil }
func (l lease) Tokenize(ctx context.Context, text string, addSpecial, parseSpecial bool) (tokens []int, err error) {
	err = l.call(ctx, func(ctx context.Context) error {
		tokens, err = l.runner.Tokenize(ctx, text, addSpecial, parseSpecial)
		return err
	})
	return tokens, err
}

// Embed runs on the worker; a runner that cannot embed refuses with llm.ErrUnsupportedModel.
func (l lease) Embed(ctx context.Context, req *llm.EmbedRequest) (res *llm.EmbedResult, err error) {
	embedder, ok := l.runner.(llm.Embedder)
	if !ok {
		return nil, fmt.Errorf("%w: the model %s cannot embed", llm.ErrUnsupportedModel, l.h.entry.ID)
	}
	err = l.call(ctx, func(ctx context.Context) error {
		res, err = embedder.Embed(ctx, req)
		return err
	})
	return res, err
}

func (l lease) Generate(ctx context.Context, req *llm.Request, emit func(llm.Event) error) error {
	m, s := l.h.m, l.h.s
	key := promptKey(req)
	m.mu.Lock()
	deaths := s.crashes[key]
	m.mu.Unlock()
	if deaths >= 2 {
		return fmt.Errorf("%w: this prompt stopped the model's worker %d times and is refused (quarantined) to keep the model serving others; change the prompt or the model", llm.ErrInvalidInput, deaths)
	}
	err := l.call(ctx, func(ctx context.Context) error { return l.runner.Generate(ctx, req, emit) })
	switch {
	case err != nil && m.cfg.Crashed(err) && !errors.Is(err, llm.ErrModelFault):
		// Only a death counts against the prompt; a model that cannot produce a token fails
		// whatever the prompt (a broken model file), so that is never the prompt's doing.
		m.mu.Lock()
		s.crashes[key]++
		m.mu.Unlock()
	case err == nil && deaths > 0:
		// It ran to the end: the deaths it was blamed for had another cause (a SIGKILL from
		// outside, another request's crash). Left counted, two such coincidences, however far
		// apart, would refuse a common prompt for good.
		m.mu.Lock()
		delete(s.crashes, key)
		m.mu.Unlock()
	}
	return err
}

// promptKey hashes what a generation's prompt is made of.
func promptKey(req *llm.Request) [32]byte {
	h := sha256.New()
	h.Write([]byte(req.Prompt))
	var b [8]byte
	for _, t := range req.Tokens {
		binary.LittleEndian.PutUint64(b[:], uint64(t))
		h.Write(b[:])
	}
	var k [32]byte
	h.Sum(k[:0])
	return k
}
