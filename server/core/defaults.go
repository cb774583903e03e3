package core

import (
	"context"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/store"
)

// Defaults are what a request that names nothing runs with on a model: the model's own
// settings where it has them, else the server's (/props default_generation_settings).
type Defaults struct {
	// Sampling has every field the engine defaults filled in.
	Sampling llm.Sampling
	// MaxTokens caps the reply; 0 lets it fill the context.
	MaxTokens int
	// SystemPrompt goes first when a conversation has no system message; "" for none.
	SystemPrompt string
}

// DefaultsFor is what an interactive request naming nothing runs with on m. It fills a request
// as a generation does (applySettings, then --max-tokens), so the two cannot drift apart; an
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
	sm.Temperature = orDefault(sm.Temperature, llm.DefaultTemperature)
	sm.TopP = orDefault(sm.TopP, llm.DefaultTopP)
	sm.TopK = orDefault(sm.TopK, llm.DefaultTopK)
	sm.MinP = orDefault(sm.MinP, llm.DefaultMinP)
	sm.RepeatPenalty = orDefault(sm.RepeatPenalty, llm.DefaultRepeatPenalty)
	return Defaults{Sampling: sm, MaxTokens: gen.MaxTokens, SystemPrompt: set.SystemPrompt}, nil
}

func orDefault[T any](v *T, def T) *T {
	if v != nil {
		return v
	}
	return &def
}
