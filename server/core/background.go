package core

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// InteractiveHold is how long after an interactive request one lane of its model stays out of
// the batch lines' reach, so that the next interactive request finds it free.
const InteractiveHold = 2 * time.Second

// laneShare bounds the batch lines running on one model. With no interactive traffic they
// take every lane and one more line waits in the engine's queue, at background priority, to
// take the next lane that frees without a gap; an interactive request jumps it, so it is never
// queued behind more than one batch line per lane. While interactive requests come (one ran
// within InteractiveHold) the batch lines keep to one lane fewer than the model has, so the
// next interactive request finds a lane free instead of waiting for a line to end. A model with
// one lane cannot keep it free.
type laneShare struct {
	lines   atomic.Int64 // batch lines holding a lane share
	touched atomic.Int64 // when an interactive request last started or ended (Unix ns)

	mu    sync.Mutex
	freed chan struct{} // closed when a share is given back
}

// interactive notes an interactive request starting or ending now.
func (l *laneShare) interactive() { l.touched.Store(time.Now().UnixNano()) }

// limit is how many batch lines may run on a model of lanes lanes now, and until when that
// holds (zero: until something changes).
func (l *laneShare) limit(lanes int) (int64, time.Time) {
	lanes = max(lanes, 1)
	until := time.Unix(0, l.touched.Load()).Add(InteractiveHold)
	if time.Now().Before(until) {
		return int64(max(lanes-1, 1)), until
	}
	return int64(lanes + 1), time.Time{}
}

// take waits for a share of m's lanes for one batch line, or for stop or ctx to end (false).
func (l *laneShare) take(ctx context.Context, stop <-chan struct{}, lanes int) bool {
	for {
		l.mu.Lock()
		if l.freed == nil {
			l.freed = make(chan struct{})
		}
		freed := l.freed
		l.mu.Unlock()
		most, until := l.limit(lanes)
		if n := l.lines.Load(); n < most && l.lines.CompareAndSwap(n, n+1) {
			return true
		} else if n < most {
			continue // another line took it first; look again
		}
		var expiry <-chan time.Time
		var timer *time.Timer
		if !until.IsZero() {
			timer = time.NewTimer(time.Until(until))
			expiry = timer.C
		}
		ok := true
		select {
		case <-freed:
		case <-expiry:
		case <-stop:
			ok = false
		case <-ctx.Done():
			ok = false
		}
		if timer != nil {
			timer.Stop()
		}
		if !ok {
			return false
		}
	}
}

// give returns a share taken by take.
func (l *laneShare) give() {
	l.lines.Add(-1)
	l.mu.Lock()
	if l.freed != nil {
		close(l.freed)
		l.freed = nil
	}
	l.mu.Unlock()
}
