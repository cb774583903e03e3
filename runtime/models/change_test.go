package models

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/llm"
)

// A settings change (Reconfigure) and a delete (Remove) unload the model as Unload does; these
// tests hold them to the same rule: a request that acquired the model before the change (it
// waits at the core's gate for a lane) runs on the worker the manager loaded, or is refused
// with ErrUnloaded when the drain runs out; it never reaches a stopped worker (a real worker
// client would start one the manager does not know), and afterwards the manager's status
// matches what runs.

// changeOf is a change that unloads the model: a settings change or a delete.
type changeOf struct {
	name string
	run  func(m *Manager, ctx context.Context, e *Entry) error
	// deleted reports whether the model is gone afterwards.
	deleted bool
}

var unloadingChanges = []changeOf{
	{"settings change", func(m *Manager, ctx context.Context, e *Entry) error {
		m.SetSettings(e.ID, Settings{ContextLength: 256})
		return m.Reconfigure(ctx, e)
	}, false},
	{"delete", func(m *Manager, ctx context.Context, e *Entry) error {
		_, _, err := m.Remove(ctx, e.ID)
		return err
	}, true},
}

// TestChangeWaitsForAcquiredRequests: the request that acquired the model runs to its end on
// the loaded worker, the change waits for it (its caller may give up: the change goes on), and
// only then is that worker stopped. A settings change's next load is the new runner's.
func TestChangeWaitsForAcquiredRequests(t *testing.T) {
	for _, change := range unloadingChanges {
		t.Run(change.name, func(t *testing.T) {
			f := newFixture(t, 1, Config{}, nil)
			h := f.handle(t, "m0")
			e := h.Entry()
			eng, release, err := h.Acquire(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			r := f.runner(e.Path)
			gone, cancel := context.WithCancel(context.Background())
			cancel()
			if err := change.run(f.mgr, gone, e); !errors.Is(err, context.Canceled) {
				t.Fatalf("the %s with its caller gone: %v, want context.Canceled (and the change going on)", change.name, err)
			}
			s := h.s
			eventually(t, "the change waits for the request", func() bool {
				f.mgr.mu.Lock()
				defer f.mgr.mu.Unlock()
				return s.wake != nil || s.state == StateUnloaded
			})
			f.mgr.mu.Lock()
			state := s.state
			f.mgr.mu.Unlock()
			if state != StateUnloading || r.unloads.Load() != 0 {
				t.Fatalf("with a request holding the model the %s went ahead: state %s, %d unloads", change.name, state, r.unloads.Load())
			}
			if err := eng.Generate(context.Background(), &llm.Request{Prompt: "hi", MaxTokens: 3}, func(llm.Event) error { return nil }); err != nil {
				t.Fatalf("the request that acquired the model before the %s: %v", change.name, err)
			}
			release(nil)
			eventually(t, "the model unloads after the request", func() bool {
				f.mgr.mu.Lock()
				defer f.mgr.mu.Unlock()
				return s.state == StateUnloaded
			})
			if r.starts.Load() != 1 || r.unloads.Load() != 1 || r.lost.Load() != 0 || r.cutShort.Load() != 0 || r.Loaded() {
				t.Fatalf("starts %d, unloads %d, generations on an unloaded runner %d, cut short %d, loaded %v; want 1, 1, 0, 0, false",
					r.starts.Load(), r.unloads.Load(), r.lost.Load(), r.cutShort.Load(), r.Loaded())
			}
			checkAfterChange(t, f, change, r)
		})
	}
}

// TestChangeDrainEndRefusesAcquiredRequests: when the drain runs out first, the request that
// still holds the model is refused with ErrUnloaded as it reaches for the worker; it starts
// none, and the manager's status says unloaded.
func TestChangeDrainEndRefusesAcquiredRequests(t *testing.T) {
	for _, change := range unloadingChanges {
		t.Run(change.name, func(t *testing.T) {
			f := newFixture(t, 1, Config{DrainTimeout: time.Millisecond}, nil)
			h := f.handle(t, "m0")
			e := h.Entry()
			eng, release, err := h.Acquire(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			r := f.runner(e.Path)
			if err := change.run(f.mgr, context.Background(), e); err != nil {
				t.Fatal(err)
			}
			err = eng.Generate(context.Background(), &llm.Request{Prompt: "hi", MaxTokens: 3}, func(llm.Event) error { return nil })
			release(nil)
			if !errors.Is(err, ErrUnloaded) || !errors.Is(err, llm.ErrEngineFailure) {
				t.Fatalf("a request cut by the %s's drain: %v, want ErrUnloaded (an engine failure)", change.name, err)
			}
			if r.starts.Load() != 1 || r.lost.Load() != 0 || r.Loaded() || h.Loaded() {
				t.Fatalf("starts %d, generations on an unloaded runner %d, runner loaded %v, model loaded %v",
					r.starts.Load(), r.lost.Load(), r.Loaded(), h.Loaded())
			}
			checkAfterChange(t, f, change, r)
		})
	}
}

// checkAfterChange checks what follows the change: a deleted model's worker is closed and the
// next request is a not-found that starts nothing; after a settings change the old runner is
// closed, the status says unloaded with nothing in flight, and the next request loads the new
// runner (one the manager made and lists).
func checkAfterChange(t *testing.T, f *fixture, change changeOf, old *fakeRunner) {
	t.Helper()
	if !old.closed.Load() {
		t.Fatalf("after the %s the old runner was not closed", change.name)
	}
	if change.deleted {
		if _, err := f.cat.Lookup("m0"); !errors.Is(err, llm.ErrModelNotFound) {
			t.Fatalf("the deleted model is still in the catalog: %v", err)
		}
		f.mgr.mu.Lock()
		n := len(f.mgr.slots)
		f.mgr.mu.Unlock()
		if n != 0 {
			t.Fatalf("the manager still lists %d models after the delete", n)
		}
		if old.starts.Load() != 1 {
			t.Fatalf("the deleted model's runner was started again (%d starts)", old.starts.Load())
		}
		return
	}
	h := f.handle(t, "m0")
	if st := f.mgr.Status(h.Entry()); st.State != StateUnloaded || st.Inflight != 0 {
		t.Fatalf("after the %s: state %s, in flight %d; want unloaded, 0", change.name, st.State, st.Inflight)
	}
	if err := generate(h); err != nil {
		t.Fatalf("the next request: %v", err)
	}
	next := f.runner(h.Entry().Path)
	if next == old || next.starts.Load() != 1 || old.starts.Load() != 1 {
		t.Fatalf("the next request: new runner %v, its starts %d, the old one's %d; want a new runner started once", next != old, next.starts.Load(), old.starts.Load())
	}
	if st := f.mgr.Status(h.Entry()); st.State != StateLoaded || !next.Loaded() {
		t.Fatalf("after the next request: state %s, runner loaded %v", st.State, next.Loaded())
	}
}
