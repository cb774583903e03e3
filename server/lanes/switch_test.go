package lanes_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/lanes"
	"github.com/superfluid/superfluid/server/store"
)

// TestSwitchDrainsRunningStreams: a switch while 8 streams run lets all 8 finish; meanwhile
// new requests, for the old model or the new, get 503 model_switching with Retry-After; the old
// engine is released only after the last stream, and then the new model serves.
func TestSwitchDrainsRunningStreams(t *testing.T) {
	b := newBench(t)
	l := b.add("main", "cuda:0", "alpha")
	const streams = 8
	var wg sync.WaitGroup
	errs := make(chan error, streams)
	for range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := b.chat("alice", "alpha")
			if err == nil && (len(res.Choices) != 1 || res.Choices[0].FinishReason != "stop") {
				err = errors.New("the stream did not finish")
			}
			errs <- err
		}()
	}
	for range streams {
		select {
		case <-b.started:
		case <-time.After(5 * time.Second):
			t.Fatal("the streams did not start")
		}
	}
	if st, err := b.mgr.Switch(context.Background(), "main", "beta"); err != nil || st.State != lanes.Switching {
		t.Fatalf("Switch = %+v, %v", st, err)
	}
	if st := l.Status(); st.Inflight != streams || st.Model != "beta" {
		t.Fatalf("while draining %+v", st)
	}
	for _, model := range []string{"alpha", "beta", ""} {
		_, err := b.chat("alice", model)
		var se *llm.StatusError
		if !errors.As(err, &se) || se.Code != "model_switching" || se.Status != http.StatusServiceUnavailable || se.RetryAfter <= 0 {
			t.Fatalf("%q while draining: %v", model, err)
		}
	}
	if _, released := b.counts("alpha"); released != 0 {
		t.Fatal("the old engine was released while streams ran")
	}
	b.open()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a running stream failed: %v", err)
		}
	}
	settle(t, l)
	if _, released := b.counts("alpha"); released != 1 {
		t.Fatalf("alpha released %d times", released)
	}
	if res, err := b.chat("alice", "beta"); err != nil || res.Model.ID != "beta" {
		t.Fatalf("after the switch: %v", err)
	}
	if _, err := b.chat("alice", "alpha"); code(err) != "model_not_loaded" {
		t.Fatalf("the old model after the switch: %v", err)
	}
	if st := l.Status(); st.State != lanes.Serving || st.Inflight != 0 {
		t.Fatalf("after %+v", st)
	}
	if row, _ := b.store.Lane(context.Background(), "main"); row.Model != "beta" {
		t.Fatalf("stored model %q", row.Model)
	}
}

// TestSwitchRace: requests arriving at the same instant as switches either run to the end on
// the model they entered (which is released only after them) or are refused with
// model_switching or model_unavailable; none runs on a released engine.
func TestSwitchRace(t *testing.T) {
	b := newBench(t)
	b.open() // replies finish at once
	l := b.add("main", "cuda:0", "alpha")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	seen := map[string]int{}
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, err := b.chat("alice", "")
				c := code(err)
				if c != "" && c != "model_switching" && c != "model_unavailable" {
					t.Errorf("during switches: %v", err)
					return
				}
				mu.Lock()
				seen[c]++
				mu.Unlock()
			}
		}()
	}
	for i := range 20 {
		model := []string{"beta", "alpha"}[i%2]
		if _, err := b.mgr.Switch(context.Background(), "main", model); err != nil {
			t.Fatal(err)
		}
		settle(t, l)
		time.Sleep(2 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if seen[""] == 0 {
		t.Fatalf("no request was served: %v", seen)
	}
	builds, releases := b.counts("alpha")
	if builds-releases != 1 {
		t.Fatalf("alpha built %d, released %d", builds, releases)
	}
}

// TestStartFailsThenServes: an engine that fails to start leaves the lane unavailable (503
// model_unavailable with Retry-After, the failure in the message) until a retry serves it; an
// engine that says it is unhealthy makes the lane unavailable again.
func TestStartFailsThenServes(t *testing.T) {
	b := newBench(t)
	b.open()
	b.fail["gamma"] = 1
	if _, err := b.mgr.Add(context.Background(), lanes.NewLane{Name: "g", Device: "cpu", Engine: lanes.Local, Model: "gamma"}); err != nil {
		t.Fatal(err)
	}
	l := b.laneNamed("g")
	settle(t, l) // the first start failed
	_, err := b.chat("", "gamma")
	var se *llm.StatusError
	if !errors.As(err, &se) || se.Code != "model_unavailable" || se.RetryAfter <= 0 {
		t.Fatalf("after a failed start: %v", err)
	}
	if st := l.Status(); st.State != lanes.Unavailable || st.Error == "" {
		t.Fatalf("status %+v", st)
	}
	deadline := time.Now().Add(5 * time.Second)
	for l.Status().State != lanes.Serving {
		if time.Now().After(deadline) {
			t.Fatalf("the retry did not serve: %+v", l.Status())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := b.chat("", "gamma"); err != nil {
		t.Fatalf("after the retry: %v", err)
	}
	b.health.Store(false)
	if _, err := b.chat("", "gamma"); code(err) != "model_unavailable" {
		t.Fatalf("unhealthy engine: %v", err)
	}
	b.health.Store(true)
}

// TestRemoveDrainsFirst: removing a lane with running requests waits for them (new ones get
// model_switching), then releases the engine and deletes the row.
func TestRemoveDrainsFirst(t *testing.T) {
	b := newBench(t)
	b.add("main", "cuda:0", "alpha")
	done := make(chan error, 2)
	for range 2 {
		go func() { _, err := b.chat("", "alpha"); done <- err }()
		<-b.started
	}
	removed := make(chan error, 1)
	go func() { removed <- b.mgr.Remove(context.Background(), "main") }()
	deadline := time.Now().Add(5 * time.Second)
	for b.laneNamed("main").Status().State != lanes.Switching {
		if time.Now().After(deadline) {
			t.Fatal("the removal did not start draining")
		}
		time.Sleep(time.Millisecond)
	}
	if _, err := b.chat("", "alpha"); code(err) != "model_switching" {
		t.Fatalf("while removing: %v", err)
	}
	select {
	case err := <-removed:
		t.Fatalf("removed with requests running: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	b.open()
	for range 2 {
		if err := <-done; err != nil {
			t.Fatalf("a running request failed: %v", err)
		}
	}
	if err := <-removed; err != nil {
		t.Fatal(err)
	}
	if _, released := b.counts("alpha"); released != 1 || len(b.mgr.Lanes()) != 0 {
		t.Fatalf("released %d, lanes %d", released, len(b.mgr.Lanes()))
	}
	if _, err := b.store.Lane(context.Background(), "main"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("row after remove: %v", err)
	}
	if err := b.mgr.Remove(context.Background(), "main"); !errors.Is(err, lanes.ErrLaneNotFound) {
		t.Fatalf("remove twice: %v", err)
	}
}

// TestBadLanes: each malformed lane or switch is refused with its error and stores nothing.
func TestBadLanes(t *testing.T) {
	b := newBench(t)
	b.add("main", "cuda:0", "alpha")
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		lane lanes.NewLane
		want error
	}{
		{"duplicate name", lanes.NewLane{Name: "main", Device: "cpu", Engine: lanes.Local, Model: "beta"}, lanes.ErrLaneExists},
		{"unknown device", lanes.NewLane{Name: "x", Device: "cuda:7", Engine: lanes.Local, Model: "beta"}, lanes.ErrUnknownDevice},
		{"unknown engine", lanes.NewLane{Name: "x", Device: "cpu", Engine: "tgi", Model: "beta"}, lanes.ErrUnknownEngine},
		{"unknown local model", lanes.NewLane{Name: "x", Device: "cpu", Engine: lanes.Local, Model: "nope"}, lanes.ErrUnknownModel},
		{"no model", lanes.NewLane{Name: "x", Device: "cpu", Engine: lanes.OpenAI, Config: store.LaneConfig{URL: "http://h/v1"}}, lanes.ErrUnknownModel},
		{"openai without url", lanes.NewLane{Name: "x", Device: "cpu", Engine: lanes.OpenAI, Model: "m"}, lanes.ErrInvalidLane},
		{"command without command", lanes.NewLane{Name: "x", Device: "cpu", Engine: lanes.Command, Model: "m"}, lanes.ErrInvalidLane},
		{"key on a local lane", lanes.NewLane{Name: "x", Device: "cpu", Engine: lanes.Local, Model: "beta", UpstreamKey: "k"}, lanes.ErrInvalidLane},
		{"remote local lane", lanes.NewLane{Name: "x", Device: lanes.Remote, Engine: lanes.Local, Model: "beta"}, lanes.ErrUnknownDevice},
		{"empty name", lanes.NewLane{Name: " ", Device: "cpu", Engine: lanes.Local, Model: "beta"}, lanes.ErrInvalidLane},
	} {
		if _, err := b.mgr.Add(ctx, tc.lane); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	if rows, _ := b.store.Lanes(ctx); len(rows) != 1 {
		t.Fatalf("%d lanes stored", len(rows))
	}
	if _, err := b.mgr.Switch(ctx, "main", "nope"); !errors.Is(err, lanes.ErrUnknownModel) {
		t.Fatalf("switch to a missing model: %v", err)
	}
	if _, err := b.mgr.Switch(ctx, "nope", "beta"); !errors.Is(err, lanes.ErrLaneNotFound) {
		t.Fatalf("switch a missing lane: %v", err)
	}
	if st := b.laneNamed("main").Status(); st.State != lanes.Serving || st.Model != "alpha" {
		t.Fatalf("a refused switch changed the lane: %+v", st)
	}
	// An openai lane may sit on no local device and keeps its key write-only.
	st, err := b.mgr.Add(ctx, lanes.NewLane{Name: "up", Engine: lanes.OpenAI, Model: "Qwen/Qwen3-8B",
		Config: store.LaneConfig{URL: "http://10.0.0.9:8000/v1"}, UpstreamKey: "sk-up"})
	if err != nil || st.Device != lanes.Remote || !st.HasKey || st.UpstreamKey != "" {
		t.Fatalf("openai lane %+v, %v", st, err)
	}
}

// TestSwitchDuringRemove: a switch that arrives while a removal drains the lane starts no
// engine on the removed lane (one would be served by nothing and released by nobody: for a
// command lane, a process left running).
func TestSwitchDuringRemove(t *testing.T) {
	b := newBench(t)
	b.add("main", "cuda:0", "alpha")
	done := make(chan error, 1)
	go func() { _, err := b.chat("", "alpha"); done <- err }()
	<-b.started
	removed := make(chan error, 1)
	go func() { removed <- b.mgr.Remove(context.Background(), "main") }()
	deadline := time.Now().Add(5 * time.Second)
	for b.laneNamed("main").Status().State != lanes.Switching {
		if time.Now().After(deadline) {
			t.Fatal("the removal did not start draining")
		}
		time.Sleep(time.Millisecond)
	}
	_, _ = b.mgr.Switch(context.Background(), "main", "beta") // refused or not: it must not start beta
	b.open()
	if err := <-done; err != nil {
		t.Fatalf("the running request failed: %v", err)
	}
	if err := <-removed; err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // a start the switch began would be done by now
	if built, released := b.counts("beta"); built != released {
		t.Fatalf("beta built %d times, released %d: an engine outlived its removed lane", built, released)
	}
	if len(b.mgr.Lanes()) != 0 {
		t.Fatalf("%d lanes after remove", len(b.mgr.Lanes()))
	}
}
