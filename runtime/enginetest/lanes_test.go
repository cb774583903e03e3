package enginetest

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/llm"
)

// TestLanesInteractiveFirst: with its one lane busy, the fake serves a queued interactive
// generation before background ones queued earlier, and each class in arrival order.
func TestLanesInteractiveFirst(t *testing.T) {
	e := New(256, "slow")
	e.Lanes = 1
	e.TokenDelay = time.Millisecond
	if got := e.Info().Parallel; got != 1 {
		t.Fatalf("Parallel %d, want the lanes", got)
	}
	ctx := context.Background()
	started := make(chan struct{})
	var wg sync.WaitGroup
	gen := func(id string, p llm.Priority, onStart func()) {
		defer wg.Done()
		err := e.Generate(ctx, &llm.Request{ID: id, Prompt: "x", Priority: p}, func(ev llm.Event) error {
			if ev.Started != nil && onStart != nil {
				onStart()
			}
			return nil
		})
		if err != nil {
			t.Errorf("%s: %v", id, err)
		}
	}
	// The first holds the lane until the others are queued.
	hold := make(chan struct{})
	wg.Add(1)
	go gen("running", llm.PriorityBackground, func() { close(started); <-hold })
	<-started
	for i, q := range []struct {
		id string
		p  llm.Priority
	}{{"background-1", llm.PriorityBackground}, {"interactive-1", llm.PriorityInteractive}, {"background-2", llm.PriorityBackground}, {"interactive-2", llm.PriorityInteractive}} {
		wg.Add(1)
		go gen(q.id, q.p, nil)
		for e.Queued() != i+1 {
			time.Sleep(100 * time.Microsecond)
		}
	}
	close(hold)
	wg.Wait()
	var order []string
	for _, r := range e.Requests() {
		order = append(order, r.ID)
	}
	if want := []string{"running", "interactive-1", "interactive-2", "background-1", "background-2"}; !slices.Equal(order, want) {
		t.Fatalf("lanes went to %v, want %v", order, want)
	}
}

// TestLanesCancelWhileWaiting: a generation cancelled while it waits leaves the queue, and the
// lane goes on to the next.
func TestLanesCancelWhileWaiting(t *testing.T) {
	e := New(256, "ok")
	e.Lanes = 1
	release, err := e.lane(context.Background(), llm.PriorityInteractive)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error)
	go func() {
		_, err := e.lane(ctx, llm.PriorityInteractive)
		errc <- err
	}()
	for e.Queued() != 1 {
		time.Sleep(100 * time.Microsecond)
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v", err)
	}
	if e.Queued() != 0 {
		t.Fatal("the cancelled generation is still queued")
	}
	release()
	if err := e.Generate(context.Background(), &llm.Request{Prompt: "x"}, func(llm.Event) error { return nil }); err != nil {
		t.Fatalf("the lane was not handed on: %v", err)
	}
}
