package enginetest

import (
	"context"

	"github.com/superfluid/superfluid/runtime/llm"
)

// waiter is a generation waiting for a lane.
type waiter struct {
	priority llm.Priority
	ready    chan struct{} // closed when it has the lane
}

// lane takes one of the fake's lanes for a generation of priority p, waiting while they are
// all busy, and returns its release. Without Lanes every generation has one at once.
func (e *Engine) lane(ctx context.Context, p llm.Priority) (release func(), err error) {
	e.mu.Lock()
	if e.Lanes <= 0 {
		e.mu.Unlock()
		return func() {}, nil
	}
	if e.busy < e.Lanes && len(e.waiting) == 0 {
		e.busy++
		e.mu.Unlock()
		return e.free, nil
	}
	w := &waiter{priority: p, ready: make(chan struct{})}
	e.waiting = append(e.waiting, w)
	e.mu.Unlock()
	select {
	case <-w.ready:
		return e.free, nil
	case <-ctx.Done():
		e.mu.Lock()
		for i, x := range e.waiting {
			if x == w {
				e.waiting = append(e.waiting[:i], e.waiting[i+1:]...)
				e.mu.Unlock()
				return nil, ctx.Err()
			}
		}
		e.mu.Unlock()
		e.free() // granted as it was cancelled: hand the lane on
		return nil, ctx.Err()
	}
}

// free gives a lane back to the first waiting generation of the highest priority.
func (e *Engine) free() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.busy--
	if len(e.waiting) == 0 {
		return
	}
	next := 0
	for i, w := range e.waiting {
		if w.priority < e.waiting[next].priority {
			next = i
		}
	}
	w := e.waiting[next]
	e.waiting = append(e.waiting[:next], e.waiting[next+1:]...)
	e.busy++
	close(w.ready)
}

// Queued is how many generations wait for a lane.
func (e *Engine) Queued() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.waiting)
}
