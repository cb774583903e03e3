package app

import (
	"cmp"
	"context"
	"crypto/rand"
	"path/filepath"
	"time"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/supervise"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/forward"
	"github.com/superfluid/superfluid/server/lanes"
)

// The command lane engine: superfluid starts the lane's server process from its command
// template (runtime/supervise: health checks, restarts with backoff, the log kept in
// <data>/logs/lanes/NAME.log) and forwards the lane's requests to it (server/forward).
func init() { laneEngines[lanes.Command] = commandLane }

// commandLane builds a lane's supervised server. {model} is the model's file when the catalog
// has it (llama-server, another superfluid), else the lane's model name as given (vLLM and
// SGLang take a Hub name). It returns once the server answers; release stops it.
func commandLane(a *App) lanes.EngineFactory {
	return func(ctx context.Context, spec lanes.Spec) (*core.Model, func(), error) {
		model := spec.Lane.Model
		if m, err := a.svc.Model(model); err == nil && m.Path != "" {
			model = m.Path
		}
		// The server asks every client for a key of its own (supervise.APIKeyEnv, {api_key}) that
		// only this lane's engine sends: nothing else on the machine reaches it around the
		// gateway's keys, bookings and accounting.
		key := "sk-lane-" + rand.Text()
		p, err := supervise.Start(supervise.Config{Command: spec.Lane.Config.Command, Model: model, APIKey: key,
			LogDir: filepath.Join(a.cfg.DataDir, "logs", "lanes"), Name: spec.Lane.Name, KeepPort: true}) // forwarded to its URL
		if err != nil {
			return nil, nil, err
		}
		stop := func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_ = p.Stop(ctx)
		}
		if err := p.WaitHealthy(ctx); err != nil {
			stop()
			return nil, nil, err
		}
		url := p.URL()
		m, err := forward.NewModel(ctx, spec.Lane.Model, forward.Config{URL: url, Key: key,
			Model: cmp.Or(spec.Lane.Config.ServedModel, spec.Lane.Model), MustAnswer: true,
			HeaderTimeout: seconds(spec.Lane.Config.HeaderTimeout), IdleTimeout: seconds(spec.Lane.Config.IdleTimeout)})
		if err != nil {
			stop()
			return nil, nil, err
		}
		m.Engine = supervised{Engine: m.Engine, p: p, url: url}
		return m, stop, nil
	}
}

// supervised is a command lane's engine: unhealthy (the lane answers model_unavailable) while
// its process restarts (on its own port: KeepPort), or when it came back on another port than
// the one forwarded to.
type supervised struct {
	llm.Engine
	p   *supervise.Process
	url string
}

// Healthy reports whether the process answers at the forwarded URL.
func (s supervised) Healthy() bool { return s.p.State() == supervise.Healthy && s.p.URL() == s.url }
