package app

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/models"
	"github.com/superfluid/superfluid/runtime/worker"
	"github.com/superfluid/superfluid/server/core"
)

// defaultSpeculative is the speculation mode of models whose settings name none, until
// --speculative says otherwise. n-gram drafting needs no second model and turns itself off
// when its drafts are rejected, so free text is never slower (the bench decides; issue 21).
const defaultSpeculative = llm.SpecNgram

// speculativeFlags declares --speculative on fs.
func speculativeFlags(fs *pflag.FlagSet, cfg *Config) {
	fs.Var(speculativeFlag{&cfg.Speculative}, "speculative", "speculative decoding of models whose settings name none: off, ngram (prompt lookup) or draft (a model's draft_model setting; n-gram without one)")
}

// speculativeFlag is a speculation mode: off, ngram or draft.
type speculativeFlag struct{ mode *string }

func (f speculativeFlag) String() string {
	if f.mode == nil || *f.mode == "" {
		return llm.SpecOff
	}
	return *f.mode
}

func (f speculativeFlag) Set(v string) error {
	if v == "" || core.CheckSpeculativeMode(v) != nil {
		return fmt.Errorf("want off, ngram or draft, got %q", v)
	}
	*f.mode = v
	return nil
}

func (f speculativeFlag) Type() string { return "mode" }

// speedOptions sets a generation worker's speculation and attention from the model's own
// settings (as the core handed them to the manager), else the server's --speculative.
func speedOptions(opts *worker.Options, set models.Settings, cfg *Config) {
	opts.Speculative = set.Speculative
	if opts.Speculative == "" {
		opts.Speculative = cfg.Speculative
	}
	opts.DraftModelPath, opts.DraftTokens, opts.FlashAttention = set.DraftModelPath, set.DraftTokens, set.FlashAttention
}
