package llamacpp

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/ollama/ollama/llama"

	"github.com/superfluid/superfluid/runtime/llm"
)

// TestInteractiveFirst: with the one lane busy, a background job queued first and an
// interactive job queued after it, the interactive job gets the lane next; the background
// job waits for it.
func TestInteractiveFirst(t *testing.T) {
	e := loadOwn(t, 1)
	// The hook runs on the loop goroutine: it holds the first job on the lane until both
	// others are queued (taking their submissions itself), and records who holds the lane.
	var holders []string
	decode := e.decode
	e.decode = func(b *llama.Batch) error {
		if j := e.lanes[0].job; j != nil && (len(holders) == 0 || holders[len(holders)-1] != j.req.ID) {
			holders = append(holders, j.req.ID)
		}
		for len(holders) == 1 && len(e.queue) < 2 {
			if !e.drain() {
				break
			}
		}
		return decode(b)
	}
	job := func(id string, p llm.Priority) *llm.Request {
		r := greedy("Once upon a time", 8)
		r.ID, r.Priority, r.IgnoreEOS = id, p, true
		return r
	}
	run := func(r *llm.Request, wg *sync.WaitGroup) {
		defer wg.Done()
		if err := e.Generate(context.Background(), r, func(llm.Event) error { return nil }); err != nil {
			t.Errorf("%s: %v", r.ID, err)
		}
	}
	var wg sync.WaitGroup
	started := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		first := job("running", llm.PriorityBackground)
		once := sync.OnceFunc(func() { close(started) })
		if err := e.Generate(context.Background(), first, func(ev llm.Event) error {
			if ev.Started != nil {
				once()
			}
			return nil
		}); err != nil {
			t.Errorf("running: %v", err)
		}
	}()
	<-started
	wg.Add(1)
	go run(job("background", llm.PriorityBackground), &wg)
	// The background job is queued before the interactive one is sent.
	for {
		s, err := e.Slots(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if s.Queued >= 1 {
			break
		}
	}
	wg.Add(1)
	go run(job("interactive", llm.PriorityInteractive), &wg)
	wg.Wait()
	if want := []string{"running", "interactive", "background"}; !slices.Equal(holders, want) {
		t.Fatalf("the lane went to %v, want %v", holders, want)
	}
}
