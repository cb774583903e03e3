package forward

import (
	"context"
	"fmt"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/core"
)

// Model is the llm.Engine of a forwarded model: what the core asks of the model rather than
// of a request. Its Generate is never called (the Engine serves requests).
type Model struct{ e *Engine }

// Info is the forwarded model's facts: the upstream's window, the lanes the core may hand it.
func (m Model) Info() llm.ModelInfo { return m.e.info }

// Tokenize is refused: the tokenizer lives upstream, and OpenAI's API has no tokenize route.
// The core then cannot count a prompt before sending it; the upstream's usage counts it.
func (m Model) Tokenize(context.Context, string, bool, bool) ([]int, error) {
	return nil, fmt.Errorf("%w: the model %s is served by %s, which tokenizes for itself", llm.ErrInvalidInput, m.e.cfg.Model, m.e.base)
}

// Generate is refused: a forwarded model takes typed requests (Engine), never a rendered prompt.
func (m Model) Generate(context.Context, *llm.Request, func(llm.Event) error) error {
	return fmt.Errorf("%w: a forwarded model renders its own prompts", llm.ErrEngineFailure)
}

// Close releases nothing: the upstream is not ours to stop.
func (m Model) Close() error { return nil }

// Model is e's llm.Engine.
func (e *Engine) Model() Model { return Model{e} }

// NewModel is the core.Model id served by forwarding to cfg's upstream (New probes it once).
func NewModel(ctx context.Context, id string, cfg Config) (*core.Model, error) {
	e, err := New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	tmpl, err := chat.Parse("") // the fallback; never rendered, since the engine takes requests
	if err != nil {
		return nil, err
	}
	return &core.Model{ID: id, Path: e.info.Path, Engine: e.Model(), Template: tmpl, Architecture: e.info.Architecture,
		ContextLength: e.info.ContextLength, EmbeddingFacts: cfg.Embedding, Requests: e}, nil
}
