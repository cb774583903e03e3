package core

import (
	"context"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/store"
)

// Defaults are what a request that names nothing runs with on a model: the model's own
// settings where it has them, else the server's (/props default_generation_settings). What the
// server does not decide is left out, never guessed: a model another server serves (a
// RequestEngine: the request road) runs what a request leaves unset with that server's own
// defaults, which this one does not know.
type Defaults struct {
	// Sampling has every field filled when this server's sampler runs the model (llama.cpp's
	// defaults where nothing else decides); on the request road only the fields the model's
	// settings set, the rest nil (the engine's own, unknown here).
	Sampling llm.Sampling
	// MaxTokens caps the reply; 0 lets it fill the context, or, with Engine set, leaves the
	// cap to the engine.
	MaxTokens int
	// SystemPrompt goes first when a conversation has no system message; "" for none.
	SystemPrompt string
	// Engine reports whether another server runs the model (a RequestEngine): what a request
	// leaves unset there, penalties and seed included, is its own default, not this server's.
	Engine bool
	// Speculative is the speculation a request naming none runs with: the mode (off, ngram,
	// draft) and the draft tokens per step (0: the engine's own default, not known here). Nil
	// on the request road (Engine).
	Speculative *llm.Speculative
}

// DefaultsFor is what an interactive request naming nothing runs with on m. It fills a request
// as a generation does (applySettings, then --max-tokens), so the two cannot drift apart, and
// on the prompt road adds the defaults this server's sampler applies (runtime/sampling); an
// error means the model's settings could not be read.
func (s *Service) DefaultsFor(ctx context.Context, m *Model) (Defaults, error) {
	var set store.ModelSettings
	if m.Entry != nil {
		var err error
		if set, err = s.ModelSettings(ctx, m.Entry.ID); err != nil {
			return Defaults{}, err
		}
	}
	var gen llm.Request
	applySettings(&gen, set)
	if gen.MaxTokens == 0 {
		gen.MaxTokens = s.cfg.MaxTokens
	}
	sm := gen.Sampling
	if m.Requests != nil {
		return Defaults{Sampling: sm, MaxTokens: gen.MaxTokens, SystemPrompt: set.SystemPrompt, Engine: true}, nil
	}
	sm.Temperature = orDefault(sm.Temperature, llm.DefaultTemperature)
	sm.TopP = orDefault(sm.TopP, llm.DefaultTopP)
	sm.TopK = orDefault(sm.TopK, llm.DefaultTopK)
	sm.MinP = orDefault(sm.MinP, llm.DefaultMinP)
	sm.RepeatPenalty = orDefault(sm.RepeatPenalty, llm.DefaultRepeatPenalty)
	return Defaults{Sampling: sm, MaxTokens: gen.MaxTokens, SystemPrompt: set.SystemPrompt, Speculative: s.defaultSpeculation(set)}, nil
}

// defaultSpeculation is what the worker of a model with settings set speculates with when a
// request names nothing: the model's mode, else --speculative, else off; draft with no draft
// model drafts n-grams (the engine's fallback, noted on each reply).
func (s *Service) defaultSpeculation(set store.ModelSettings) *llm.Speculative {
	spec := &llm.Speculative{Mode: set.Speculative, DraftTokens: set.DraftTokens}
	if spec.Mode == "" {
		spec.Mode = s.cfg.Speculative
	}
	switch {
	case spec.Mode == "":
		spec.Mode = llm.SpecOff
	case spec.Mode == llm.SpecDraft && set.DraftModel == "":
		spec.Mode = llm.SpecNgram
	}
	return spec
}

func orDefault[T any](v *T, def T) *T {
	if v != nil {
		return v
	}
	return &def
}
