package models

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
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
	if h.Loaded() {
		if info := h.s.runner.Info(); info.ContextLength > 0 {
			return info
		}
	}
	e := h.entry
	return llm.ModelInfo{
		Path: e.Path, Architecture: e.Facts.Architecture, ContextLength: h.m.contextLength(e),
		TrainContextLength: e.Facts.ContextLength, Parallel: max(1, h.m.lanes(e)),
		// What its next load runs on.
		Runtime:   "llamacpp-" + cmp.Or(h.m.settings(e).Runtime, "cpu"),
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
		return nil, nil, fmt.Errorf("%w: the model %s cannot be used: %v", llm.ErrEngineFailure, h.entry.ID, h.entry.Err)
	}
	if err := h.m.acquire(ctx, h.entry.ID, h.s, false); err != nil {
		return nil, nil, err
	}
	h.m.cat.Touch(h.entry.ID, time.Now())
	return lease{h}, func(ka *time.Duration) { h.m.release(h.s, ka) }, nil
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
	h.m.mu.Lock()
	r := h.s.runner
	if h.s.state != StateLoaded {
		if h.s.vocab == nil {
			h.s.vocab = h.m.cfg.NewRunner(h.entry, true)
		}
		r = h.s.vocab
		h.m.mu.Unlock()
		return r.Tokenize(ctx, text, addSpecial, parseSpecial)
	}
	h.s.inflight++ // an unload waits for it; the keep-alive restarts as it was
	h.s.stopTimer()
	h.m.mu.Unlock()
	defer func() {
		h.m.mu.Lock()
		h.m.releaseLocked(h.s)
		h.m.mu.Unlock()
	}()
	return r.Tokenize(ctx, text, addSpecial, parseSpecial)
}

// Slots is the loaded worker's lane snapshot; a model that is not loaded has none.
func (h *Handle) Slots(ctx context.Context) (llm.Slots, error) {
	if !h.Loaded() {
		return llm.Slots{}, nil
	}
	return h.s.runner.Slots(ctx)
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

// lease is the engine of an acquired model: generations go to the worker, and a prompt that
// kills the worker twice, with no run to the end between, is refused afterwards instead of
// killing it again (SDKs retry 5xx).
type lease struct{ h *Handle }

func (l lease) Info() llm.ModelInfo { return l.h.Info() }
func (l lease) Close() error        { return nil }
func (l lease) Tokenize(ctx context.Context, text string, addSpecial, parseSpecial bool) ([]int, error) {
	return l.h.s.runner.Tokenize(ctx, text, addSpecial, parseSpecial)
}

// Embed runs on the worker; a runner that cannot embed refuses with llm.ErrUnsupportedModel.
func (l lease) Embed(ctx context.Context, req *llm.EmbedRequest) (*llm.EmbedResult, error) {
	embedder, ok := l.h.s.runner.(llm.Embedder)
	if !ok {
		return nil, fmt.Errorf("%w: the model %s cannot embed", llm.ErrUnsupportedModel, l.h.entry.ID)
	}
	return embedder.Embed(ctx, req)
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
	err := s.runner.Generate(ctx, req, emit)
	switch {
	case err != nil && m.cfg.Crashed(err):
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
