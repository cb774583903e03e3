package core_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/models"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/core/qos"
	"github.com/superfluid/superfluid/server/store"
)

var requestIDs atomic.Int64

// send sends one chat whose message is text to model, of class, on ctx; its outcome comes on
// the returned channel.
func (g *gatedCatalog) send(ctx context.Context, model, text string, class qos.Class) <-chan error {
	out := make(chan error, 1)
	id := fmt.Sprintf("r-%d", requestIDs.Add(1))
	go func() {
		_, err := g.svc.Chat(ctx, &core.ChatRequest{ID: id, Model: model, QoS: class,
			Messages: []chat.Message{{Role: "user", Content: text}}, Generation: llm.Request{MaxTokens: 2}},
			func(int, llm.Event) error { return nil })
		out <- err
	}()
	return out
}

// TestChangeWithRequestsAtTheGate: the worker's one lane is busy and a second request waits at
// the gate when the model's settings change (it reloads) or it is deleted. As with an unload,
// the waiter runs before the change completes or (when the drain ends first) both get a clean
// ErrUnloaded; no generation reaches a worker the manager stopped, the manager's status then
// matches the worker, and after a settings change the next request loads it again while after
// a delete it is a not-found that starts nothing.
func TestChangeWithRequestsAtTheGate(t *testing.T) {
	changes := []struct {
		name    string
		run     func(svc *core.Service) error
		deleted bool
	}{
		{"settings change", func(svc *core.Service) error {
			return svc.SetModelSettings(context.Background(), store.ModelSettings{ModelID: "m", ContextLength: 256})
		}, false},
		{"delete", func(svc *core.Service) error {
			_, err := svc.DeleteModel(context.Background(), "m")
			return err
		}, true},
	}
	for _, change := range changes {
		for _, tc := range []struct {
			name  string
			drain time.Duration
		}{{"drained", time.Minute}, {"drain ends", 20 * time.Millisecond}} {
			t.Run(change.name+"/"+tc.name, func(t *testing.T) {
				g := newGatedCatalog(t, 1, tc.drain)
				running := g.chat("m")
				m, _ := g.svc.Model("m")
				waitUntil(t, "the lane busy", func() bool { return g.runner.active.Load() == 1 })
				waiting := g.chat("m")
				waitUntil(t, "a request waiting at the gate", func() bool { return m.Waiting() == 1 })
				changed := make(chan error, 1)
				go func() { changed <- change.run(g.svc) }()
				if tc.drain > time.Second {
					// The old Model's handle is the old slot's (a delete drops the slot from
					// the manager at once, so ModelStatus would not see this one).
					waitUntil(t, "unloading", func() bool { return !m.Loaded() })
					close(g.runner.hold) // the running request ends; the waiter gets the lane
				}
				errs := []error{<-running, <-waiting}
				if err := <-changed; err != nil {
					t.Fatalf("the %s: %v", change.name, err)
				}
				for i, err := range errs {
					if tc.drain > time.Second && err != nil {
						t.Fatalf("request %d during a drain that let it finish: %v", i, err)
					}
					if err != nil && !errors.Is(err, models.ErrUnloaded) {
						t.Fatalf("request %d cut by the %s: %v, want ErrUnloaded", i, change.name, err)
					}
				}
				if n := g.runner.strangers.Load(); n != 0 {
					t.Fatalf("%d generations reached the worker after the manager stopped it (a worker it does not know)", n)
				}
				if m.Loaded() || g.runner.Loaded() || m.Inflight() != 0 {
					t.Fatalf("after the %s: model loaded %v, runner loaded %v, in flight %d", change.name, m.Loaded(), g.runner.Loaded(), m.Inflight())
				}
				if !change.deleted {
					if st := g.svc.ModelStatus(m); st.State != models.StateUnloaded || st.Inflight != 0 {
						t.Fatalf("after the %s: state %s, in flight %d", change.name, st.State, st.Inflight)
					}
				}
				if tc.drain <= time.Second {
					close(g.runner.hold)
				}
				if change.deleted {
					if err := <-g.chat("m"); !errors.Is(err, llm.ErrModelNotFound) || g.runner.starts.Load() != 1 || g.runner.Loaded() {
						t.Fatalf("a request for the deleted model: %v after %d loads (loaded %v); want a not-found that loads nothing",
							err, g.runner.starts.Load(), g.runner.Loaded())
					}
					return
				}
				if err := <-g.chat("m"); err != nil || g.runner.starts.Load() != 2 {
					t.Fatalf("the next request: %v after %d loads; want a second load the manager made", err, g.runner.starts.Load())
				}
				if st := g.svc.ModelStatus(m); st.State != models.StateLoaded || !g.runner.Loaded() {
					t.Fatalf("after the next request: state %s, runner loaded %v", st.State, g.runner.Loaded())
				}
			})
		}
	}
}

// TestSettingsChangeSharesTheGate: requests admitted on the model before a settings change that
// rebuilds its core Model (a new window) reach the worker after it, beside requests that came
// after it: the old and the new Model count one in-flight total and hand out the worker's lanes
// from one gate, so no more generations run at once than the worker has lanes.
func TestSettingsChangeSharesTheGate(t *testing.T) {
	const lanes, each = 2, 4
	g := newGatedCatalog(t, lanes, 0)
	before, err := g.svc.Model("m")
	if err != nil {
		t.Fatal(err)
	}
	// The requests from before the change are held after admission, before they acquire the
	// model (the admission hook runs there).
	admit := make(chan struct{})
	held := core.WithAdmitted(context.Background(), func() { <-admit })
	var outs []<-chan error
	for range each {
		outs = append(outs, g.send(held, "m", "before", qos.Unset))
	}
	waitUntil(t, "the requests from before the change admitted", func() bool { return before.Inflight() == each })
	if err := g.svc.SetModelSettings(context.Background(), store.ModelSettings{ModelID: "m", ContextLength: 256}); err != nil {
		t.Fatal(err)
	}
	after, err := g.svc.Model("m")
	if err != nil {
		t.Fatal(err)
	}
	if after == before {
		t.Fatal("the settings change did not rebuild the model (the test needs it to)")
	}
	for range each {
		outs = append(outs, g.send(context.Background(), "m", "after", qos.Unset))
	}
	waitUntil(t, "the requests from after the change on the worker and at the gate", func() bool {
		return g.runner.peak.Load() > lanes || (g.runner.active.Load() == lanes && after.Waiting() == each-lanes)
	})
	if before.Inflight() != 2*each || after.Inflight() != 2*each {
		t.Fatalf("in flight: the model from before the change counts %d, the one from after %d; want %d each (one count per worker)",
			before.Inflight(), after.Inflight(), 2*each)
	}
	close(admit) // the requests from before the change acquire the model and go to the gate
	waitUntil(t, "every request on the worker or at its gate", func() bool {
		return g.runner.peak.Load() > lanes || (g.runner.active.Load() == lanes && after.Waiting() == 2*each-lanes)
	})
	if p := g.runner.peak.Load(); p > lanes {
		t.Fatalf("%d generations ran at once on a worker of %d lanes: the Model rebuilt by the settings change has its own gate", p, lanes)
	}
	if before.Waiting() != after.Waiting() {
		t.Fatalf("the model from before the change sees %d waiting, the one from after %d", before.Waiting(), after.Waiting())
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

// TestClassOrderAcrossNames: requests of two classes sent to two names of one worker (the id
// and an alias) are granted its one lane in class order, interactive before background,
// whichever name each used; within a class, in arrival order.
func TestClassOrderAcrossNames(t *testing.T) {
	g := newGatedCatalog(t, 1, 0)
	if _, err := g.mgr.Catalog().Copy(context.Background(), "m", "alias"); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var order []string
	g.runner.started = func(req *llm.Request) {
		mu.Lock()
		defer mu.Unlock()
		for _, tag := range []string{"first", "bg1", "bg2", "fg1", "fg2"} {
			if strings.Contains(req.Prompt, "<"+tag+">") {
				order = append(order, tag)
				return
			}
		}
		order = append(order, "?")
	}
	started := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(order)
	}
	m, err := g.svc.Model("m")
	if err != nil {
		t.Fatal(err)
	}
	outs := []<-chan error{g.send(context.Background(), "m", "<first>", qos.Interactive)}
	waitUntil(t, "the lane busy", func() bool { return g.runner.active.Load() == 1 })
	for i, r := range []struct {
		model, tag string
		class      qos.Class
	}{
		{"alias", "bg1", qos.Background},
		{"m", "fg1", qos.Interactive},
		{"m", "bg2", qos.Background},
		{"alias", "fg2", qos.Interactive},
	} {
		outs = append(outs, g.send(context.Background(), r.model, fmt.Sprintf("<%s>", r.tag), r.class))
		waitUntil(t, fmt.Sprintf("%s (%s) waiting at the gate", r.tag, r.model), func() bool {
			return g.runner.peak.Load() > 1 || m.Waiting() == i+1
		})
		if p := g.runner.peak.Load(); p > 1 {
			t.Fatalf("%s (%s) ran beside the first request on a worker of one lane: the alias has its own gate", r.tag, r.model)
		}
	}
	for n := 1; n < len(outs); n++ {
		g.runner.hold <- struct{}{} // the one on the worker ends; the gate grants the next
		waitUntil(t, "the next request granted the lane", func() bool { return started() == n+1 })
	}
	g.runner.hold <- struct{}{}
	for i, out := range outs {
		if err := <-out; err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"first", "fg1", "fg2", "bg1", "bg2"}; !slices.Equal(order, want) {
		t.Fatalf("the lane went to %v, want %v (class order across the id and its alias)", order, want)
	}
	if p := g.runner.peak.Load(); p > 1 {
		t.Fatalf("%d generations ran at once on a worker of one lane", p)
	}
}
