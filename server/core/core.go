// Package core is what the HTTP dialects call: it resolves models, readies each request for
// the model's engine kind (rendered with the model's chat template for a local engine, or
// handed typed to a chat-level RequestEngine: engine.go), schedules and runs generations, and
// records every request. It knows nothing of HTTP or of any dialect's wire format.
package core

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/media"
	"github.com/superfluid/superfluid/runtime/models"
	"github.com/superfluid/superfluid/server/store"
)

// Model is one servable model.
type Model struct {
	// ID is what clients name it by: the file's base name without .gguf.
	ID       string
	Path     string
	Engine   llm.Engine
	Template *chat.Template
	// BOS and EOS are the text of the model's special tokens, for templates.
	BOS, EOS string
	// ContextLength is the window known before the engine loads (flag or GGUF metadata).
	ContextLength int
	// FIM holds the fill-in-the-middle markers; nil when the model has none.
	FIM          *FIMTokens
	Architecture string
	Size         int64
	Created      time.Time
	// Entry is the catalog entry the model comes from; nil for a fixed set of models.
	Entry *models.Entry
	// EmbeddingFacts is what the GGUF says the model embeds (nil: it generates); Embedding
	// prefers the loaded engine's view.
	EmbeddingFacts *llm.Embedding
	// Projector is the model's multimodal projector (mmproj) file, "" for none; Vision and Audio
	// say what it encodes, from its GGUF metadata (known before any load).
	Projector     string
	Vision, Audio bool

	// shared is the scheduling state of the model's worker: every name of one model file (an
	// alias, a Model rebuilt after a settings change) hands out the same lanes, so they share
	// one gate, lane share and in-flight count. Made on first use for a fixed set of models.
	shared atomic.Pointer[workerSched]
	caps   struct { // Capabilities, worked out once
		once sync.Once
		v    Capabilities
	}

	// Requests, when set, serves the model's chat, completion and embedding requests typed,
	// before any template (a forwarding engine, engine.go): the core neither renders a prompt
	// nor shapes the reply. Engine still answers Info, Tokenize and the lifecycle. Such a model
	// needs no Template (New gives it the fallback); its capabilities are the engine's when it
	// is a CapabilityReporter.
	Requests RequestEngine
}

// workerSched is what the requests to one worker are scheduled by.
type workerSched struct {
	inflight   atomic.Int64 // generations running or queued on the engine
	background atomic.Int64 // batch lines among them, outside the --queue bound
	lanes      laneShare    // how many of its lanes batch lines may take (background.go)
	gate       qosGate      // hands its lanes to generations by scheduling class (qos.go)
}

// sched is the model's worker's scheduling state.
func (m *Model) sched() *workerSched {
	if w := m.shared.Load(); w != nil {
		return w
	}
	m.shared.CompareAndSwap(nil, new(workerSched))
	return m.shared.Load()
}

// Matches reports whether name refers to this model: its id.
func (m *Model) Matches(name string) bool { return name == m.ID }

// Loaded reports whether the model's engine is up.
func (m *Model) Loaded() bool {
	if l, ok := m.Engine.(interface{ Loaded() bool }); ok {
		return l.Loaded()
	}
	return true
}

// Info is the engine's view of the model, filled in from what is known before loading.
func (m *Model) Info() llm.ModelInfo {
	info := m.Engine.Info()
	if info.ContextLength == 0 {
		info.ContextLength = m.ContextLength
		info.Architecture = m.Architecture
		info.Path = m.Path
	}
	return info
}

// Config holds the operator's generation defaults and limits.
type Config struct {
	// MaxTokens caps completions that name no cap (--max-tokens); 0 fills the context.
	MaxTokens int
	// Speculative is the speculation mode of models whose settings name none (--speculative;
	// the worker runs it, /props reports it); "" is off.
	Speculative string
	// Queue is how many generations may wait for a lane beyond the lanes themselves (--queue);
	// past it requests are refused with llm.OverloadedError. 0 means no bound.
	Queue int
	// CheckRuntime says why a runtime cannot serve models here (missing, no device); nil
	// accepts every name. Errors are reported as ErrUnsupportedRuntime.
	CheckRuntime func(name string) error
	// Observer receives the core's metrics (tokens, latencies, batch lines); nil observes
	// nothing.
	Observer Observer
	// QoS tunes the scheduling classes.
	QoS QoSConfig
	// IsolateCache partitions the engines' prefix caches by caller (the person in team mode,
	// else the key; llm.Request.CachePartition), so cached_tokens and x-superfluid-warm never
	// reveal that someone else sent the same prompt.
	IsolateCache bool
	// SharedPrefixes, with IsolateCache, are the texts whose cached tokens every caller may
	// reuse (shared.go); nil shares nothing.
	SharedPrefixes SharedPrefixes
	// Media bounds the images and audio clips a request may carry, and says whether remote
	// URLs are fetched (--allow-remote-media); zero fields take media.DefaultLimits.
	Media media.Limits
}

// Service is the core.
type Service struct {
	cfg      Config
	lib      Library
	mgr      *models.Manager // nil for a fixed set of models
	source   models.Source   // where PullModel pulls from; nil: nowhere
	store    *store.Store
	settings settingsCache
	// running counts the generation requests between their start and their record, so a
	// shutdown can wait for their records before closing the store.
	running sync.WaitGroup
	router  Router // resolves names instead of lib when set (route.go)
	// sharedForms are the shared prefixes as the models' templates render them (shared.go).
	sharedForms sharedForms
	// lora is the LoRA adapters loaded per model (lora.go).
	lora loraRegistry
	// media decodes the images and audio clips of requests (media.go); mediaHeld is what the
	// decoded media of the requests in flight come to, in bytes (decodedBudget).
	media     *media.Resolver
	mediaHeld atomic.Int64
	// mediaCache keeps recently decoded media, so a re-sent image is not decoded again.
	mediaCache *mediaCache
	// move refuses catalog changes and loads while the models folder is moved (models_move.go).
	move moveGuard
}

// Wait blocks until every generation request has been recorded, or ctx ends.
func (s *Service) Wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		s.running.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// New builds the core over a fixed set of models; st may be nil (nothing recorded).
func New(cfg Config, st *store.Store, fixed ...*Model) *Service {
	for _, m := range fixed {
		if m.Template == nil {
			// A model with no template of its own (one a RequestEngine serves renders its own
			// prompts) gets the fallback, which listings, token counts and probes read.
			m.Template, _ = chat.Parse("")
		}
	}
	return &Service{cfg: cfg, lib: staticLibrary(fixed), store: st, media: newResolver(cfg), mediaCache: newMediaCache(mediaCacheBytes, mediaCacheEntries)}
}

// Config returns the generation defaults.
func (s *Service) Config() Config { return s.cfg }

// Models lists the servable models.
func (s *Service) Models() []*Model { return s.lib.Models() }

// Model resolves a client's model name. A name that could reach outside the catalog (a path,
// "..", control characters, too long) is invalid input.
func (s *Service) Model(name string) (*Model, error) {
	if err := models.CheckName(name); err != nil {
		return nil, err
	}
	return s.lib.Model(name)
}

// Tokenize returns the token ids of text, without chat scaffolding.
func (s *Service) Tokenize(ctx context.Context, model, text string, addSpecial bool) ([]int, error) {
	m, err := s.ModelFor(ctx, model)
	if err != nil {
		return nil, err
	}
	if err := checkTextLength(m, len(text)); err != nil {
		return nil, err
	}
	return m.Engine.Tokenize(ctx, text, addSpecial, true)
}

// Prompt renders messages into the prompt text with the model's chat template.
func (s *Service) Prompt(m *Model, msgs []chat.Message, kwargs map[string]any) (string, error) {
	return s.render(m, msgs, kwargs, nil)
}

func (s *Service) render(m *Model, msgs []chat.Message, kwargs map[string]any, tools []chat.Tool) (string, error) {
	prompt, err := m.Template.Render(msgs, chat.Options{BOSToken: m.BOS, EOSToken: m.EOS, AddGenerationPrompt: true, Kwargs: kwargs, Tools: tools})
	if err != nil {
		if len(tools) > 0 {
			return "", fmt.Errorf("%w: this model's chat template cannot render the tools: %v", llm.ErrInvalidInput, err)
		}
		return "", fmt.Errorf("%w: %v", llm.ErrInvalidInput, err)
	}
	return prompt, nil
}

// addSpecial tells the tokenizer to add BOS unless the template already wrote it.
func addSpecial(m *Model, prompt string) bool {
	return m.BOS == "" || !strings.HasPrefix(prompt, m.BOS)
}

// statusOf is the HTTP status a request record gets for err (dialects agree on these).
func statusOf(err error) int {
	var se *llm.StatusError
	switch {
	case err == nil:
		return 200
	case errors.As(err, &se) && se.Status != 0:
		return se.Status // a routing refusal (403 gpu_reserved, 503 model_switching, ...)
	case errors.Is(err, context.Canceled):
		return 499 // client closed the request
	case errors.Is(err, llm.ErrModelNotFound):
		return 404
	case errors.Is(err, llm.ErrContextLength), errors.Is(err, llm.ErrInvalidInput):
		return 400
	case errors.Is(err, llm.ErrOverloaded):
		return 429
	default:
		return 500
	}
}

// ChoicesError refuses a request for more choices (n) than the model's lanes and queue could
// ever hold at once: retrying cannot help, so it is invalid input rather than overload.
type ChoicesError struct {
	N, Lanes, Queue int
}

func (e *ChoicesError) Error() string {
	return fmt.Sprintf("n=%d is more than this model can ever run at once (%d lanes + %d queued); ask for at most %d",
		e.N, e.Lanes, e.Queue, e.Lanes+e.Queue)
}

// Unwrap lets errors.Is(err, llm.ErrInvalidInput) match.
func (e *ChoicesError) Unwrap() error { return llm.ErrInvalidInput }

// undelivered marks an error from a dialect's Emit: the reply could not be written (the client
// hung up, or stopped reading for longer than the write timeout). It matches context.Canceled,
// so the request is recorded as a client disconnect (499) like a hang-up noticed by the
// request's context.
func undelivered(err error) error {
	if err == nil {
		return nil
	}
	return &undeliveredError{err}
}

type undeliveredError struct{ err error }

func (e *undeliveredError) Error() string { return "reply not delivered: " + e.err.Error() }

func (e *undeliveredError) Unwrap() []error { return []error{context.Canceled, e.err} }

// LoadModel makes sure the model's engine is up (Ollama's empty generate, /v1/models/load).
func (s *Service) LoadModel(ctx context.Context, name string) (*Model, error) {
	m, err := s.Model(name)
	if err != nil {
		return nil, err
	}
	if starter, ok := m.Engine.(interface{ Start(context.Context) error }); ok {
		if err := starter.Start(ctx); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Slots is a snapshot of the model's lanes; a model whose engine is not up reports none.
func (s *Service) Slots(ctx context.Context, name string) (*Model, llm.Slots, error) {
	m, err := s.Model(name)
	if err != nil {
		return nil, llm.Slots{}, err
	}
	reporter, ok := m.Engine.(llm.SlotsReporter)
	if !ok || !m.Loaded() {
		return m, llm.Slots{}, nil
	}
	slots, err := reporter.Slots(ctx)
	return m, slots, err
}

// Inflight is how many generations are running or queued on the model right now.
func (m *Model) Inflight() int {
	w := m.sched()
	return int(w.inflight.Load() + w.background.Load())
}

// admit reserves n generations on m, or refuses when the lanes and the queue are full. More
// than the lanes and the queue together could never run, so that is invalid input, not a
// reason to retry.
func (s *Service) admit(m *Model, n int) (release func(), err error) {
	w := m.sched()
	if s.cfg.Queue <= 0 {
		w.inflight.Add(int64(n))
		return func() { w.inflight.Add(-int64(n)) }, nil
	}
	lanes := max(1, m.Info().Parallel)
	limit := lanes + s.cfg.Queue
	if n > limit {
		return nil, &ChoicesError{N: n, Lanes: lanes, Queue: s.cfg.Queue}
	}
	total := w.inflight.Add(int64(n))
	release = func() { w.inflight.Add(-int64(n)) }
	if total > int64(limit) {
		release()
		return nil, &llm.OverloadedError{Limit: limit, RetryAfter: time.Second}
	}
	return release, nil
}
