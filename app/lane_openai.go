package app

import (
	"cmp"
	"context"
	"time"

	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/forward"
	"github.com/superfluid/superfluid/server/lanes"
)

// The openai lane engine: the lane's model is forwarded to the OpenAI-compatible server at its
// URL (server/forward), under its served model name.
func init() { laneEngines[lanes.OpenAI] = openaiLane }

// seconds is n seconds (a lane's timeouts; 0 stays 0, the engine's default).
func seconds(n int) time.Duration { return time.Duration(n) * time.Second }

// openaiLane builds a lane's forwarding model. It fails while the upstream does not answer,
// so the lane stays unavailable (and retries) until it does; an upstream that is this server
// is refused (a forwarding loop).
func openaiLane(*App) lanes.EngineFactory {
	return func(ctx context.Context, spec lanes.Spec) (*core.Model, func(), error) {
		m, err := forward.NewModel(ctx, spec.Lane.Model, forward.Config{URL: spec.Lane.Config.URL, Key: spec.UpstreamKey,
			Model: cmp.Or(spec.Lane.Config.ServedModel, spec.Lane.Model), MustAnswer: true,
			HeaderTimeout: seconds(spec.Lane.Config.HeaderTimeout), IdleTimeout: seconds(spec.Lane.Config.IdleTimeout)})
		if err != nil {
			return nil, nil, err
		}
		return m, func() {}, nil // nothing to stop: the upstream is not ours
	}
}
