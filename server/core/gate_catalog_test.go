package core_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/models"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/servertest"
)

// laneRunner is a fake worker with lanes lanes that runs every generation it is given at once
// (so that only the core's gate bounds them) and holds each until hold closes or its call is
// cancelled. It counts the generations on it now, the most there ever were, and those that
// found it unloaded: a real worker client would have started a worker for them that the
// manager does not know.
type laneRunner struct {
	*enginetest.Engine
	lanes int
	hold  chan struct{}
	// started, when set, is told of each generation as it reaches the worker.
	started func(req *llm.Request)

	loaded                          atomic.Bool
	starts, active, peak, strangers atomic.Int32
}

func (r *laneRunner) Info() llm.ModelInfo {
	info := r.Engine.Info()
	info.Parallel = r.lanes
	return info
}

func (r *laneRunner) Start(context.Context) error {
	if !r.loaded.Swap(true) {
		r.starts.Add(1)
	}
	return nil
}

func (r *laneRunner) Unload(context.Context) error {
	r.loaded.Store(false)
	return nil
}

func (r *laneRunner) Loaded() bool                             { return r.loaded.Load() }
func (r *laneRunner) Slots(context.Context) (llm.Slots, error) { return llm.Slots{}, nil }

func (r *laneRunner) Generate(ctx context.Context, req *llm.Request, emit func(llm.Event) error) error {
	if !r.loaded.Load() {
		r.strangers.Add(1)
		return errors.New("a generation reached an unloaded worker")
	}
	n := r.active.Add(1)
	defer r.active.Add(-1)
	if r.started != nil {
		r.started(req)
	}
	for p := r.peak.Load(); n > p && !r.peak.CompareAndSwap(p, n); p = r.peak.Load() {
	}
	select {
	case <-r.hold:
	case <-ctx.Done():
		return ctx.Err()
	}
	return r.Engine.Generate(ctx, req, emit)
}

// gatedCatalog is a catalog-backed core with the QoS gate on, over one model "m" whose worker
// is a laneRunner.
type gatedCatalog struct {
	svc    *core.Service
	mgr    *models.Manager
	runner *laneRunner
}

func newGatedCatalog(t *testing.T, lanes int, drain time.Duration) *gatedCatalog {
	t.Helper()
	st := servertest.Store(t)
	dir := t.TempDir()
	cat, err := models.OpenCatalog(context.Background(), st, filepath.Join(dir, "models"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "m.gguf")
	if err := gguftest.WriteTinyLlama(path, gguftest.TinyLlamaOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cat.AddLocal(context.Background(), path, "m"); err != nil {
		t.Fatal(err)
	}
	g := &gatedCatalog{runner: &laneRunner{Engine: enginetest.New(512, "ok"), lanes: lanes, hold: make(chan struct{})}}
	g.mgr = models.NewManager(cat, models.Config{MemoryBudget: 1 << 40, DrainTimeout: drain,
		NewRunner: func(e *models.Entry, vocabOnly bool) models.Runner {
			if vocabOnly {
				return &laneRunner{Engine: enginetest.New(512, "ok"), lanes: lanes}
			}
			return g.runner // one runner for the file, however many names it has
		}})
	t.Cleanup(func() { g.mgr.Close() })
	g.svc = core.NewCatalog(core.Config{QoS: core.QoSConfig{Gate: true, Reserve: -1}}, st, g.mgr, nil)
	return g
}

// chat sends one chat to model and reports its outcome on the returned channel.
func (g *gatedCatalog) chat(model string) <-chan error {
	out := make(chan error, 1)
	go func() {
		_, err := g.svc.Chat(context.Background(), &core.ChatRequest{ID: "r", Model: model,
			Messages: []chat.Message{{Role: "user", Content: "hi"}}, Generation: llm.Request{MaxTokens: 2}},
			func(int, llm.Event) error { return nil })
		out <- err
	}()
	return out
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestAliasSharesTheGate: two names of one model (an /api/copy alias) used at once share its
// worker's lanes: the gate never grants more generations than the worker has lanes.
func TestAliasSharesTheGate(t *testing.T) {
	const lanes, each = 2, 3
	g := newGatedCatalog(t, lanes, 0)
	if _, err := g.mgr.Catalog().Copy(context.Background(), "m", "alias"); err != nil {
		t.Fatal(err)
	}
	var outs []<-chan error
	for i := range 2 * each {
		outs = append(outs, g.chat([]string{"m", "alias"}[i%2]))
	}
	m, err := g.svc.Model("m")
	if err != nil {
		t.Fatal(err)
	}
	// Every request is on the worker or waiting at the gate, or the lanes were given twice.
	waitUntil(t, "the lanes busy and the rest waiting", func() bool {
		return g.runner.peak.Load() > lanes || (g.runner.active.Load() == lanes && m.Waiting() == 2*each-lanes)
	})
	if p := g.runner.peak.Load(); p > lanes {
		t.Fatalf("%d generations ran at once on a worker of %d lanes: each name has its own gate", p, lanes)
	}
	alias, _ := g.svc.Model("alias")
	if alias.Waiting() != m.Waiting() || alias.Inflight() != m.Inflight() {
		t.Fatalf("the alias sees %d waiting and %d in flight, the model %d and %d", alias.Waiting(), alias.Inflight(), m.Waiting(), m.Inflight())
	}
	close(g.runner.hold)
	for i, out := range outs {
		if err := <-out; err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	if p := g.runner.peak.Load(); p > lanes {
		t.Fatalf("%d generations ran at once on a worker of %d lanes", p, lanes)
	}
}

// TestUnloadWithRequestsAtTheGate: the worker's one lane is busy and a second request waits at
// the gate when the model is unloaded. Either the waiter runs before the unload completes, or
// (when the drain ends first) both get a clean ErrUnloaded; in no case does a generation reach
// a worker the manager has unloaded, and afterwards the model is unloaded and loads again.
func TestUnloadWithRequestsAtTheGate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		drain time.Duration
	}{{"drained", time.Minute}, {"drain ends", 20 * time.Millisecond}} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGatedCatalog(t, 1, tc.drain)
			running, waiting := g.chat("m"), (<-chan error)(nil)
			m, _ := g.svc.Model("m")
			waitUntil(t, "the lane busy", func() bool { return g.runner.active.Load() == 1 })
			waiting = g.chat("m")
			waitUntil(t, "a request waiting at the gate", func() bool { return m.Waiting() == 1 })
			unloaded := make(chan error, 1)
			go func() {
				_, err := g.svc.UnloadModel(context.Background(), "m")
				unloaded <- err
			}()
			if tc.drain > time.Second {
				waitUntil(t, "unloading", func() bool { return g.svc.ModelStatus(m).State == models.StateUnloading })
				close(g.runner.hold) // the running request ends; the waiter gets the lane
			}
			errs := []error{<-running, <-waiting}
			if err := <-unloaded; err != nil {
				t.Fatal(err)
			}
			for i, err := range errs {
				if tc.drain > time.Second && err != nil {
					t.Fatalf("request %d during a drain that let it finish: %v", i, err)
				}
				if err != nil && !errors.Is(err, models.ErrUnloaded) {
					t.Fatalf("request %d cut by the unload: %v, want ErrUnloaded", i, err)
				}
			}
			if n := g.runner.strangers.Load(); n != 0 {
				t.Fatalf("%d generations reached the worker after the manager unloaded it (a worker it does not know)", n)
			}
			if st := g.svc.ModelStatus(m); st.State != models.StateUnloaded || g.runner.Loaded() || st.Inflight != 0 {
				t.Fatalf("after the unload: state %s, runner loaded %v, in flight %d", st.State, g.runner.Loaded(), st.Inflight)
			}
			if tc.drain <= time.Second {
				close(g.runner.hold)
			}
			if err := <-g.chat("m"); err != nil || g.runner.starts.Load() != 2 {
				t.Fatalf("the next request: %v after %d loads; want a second load the manager made", err, g.runner.starts.Load())
			}
		})
	}
}
