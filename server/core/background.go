package core

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/superfluid/superfluid/runtime/llm"
)

// Background work (the batch runner, server/batches) runs through the same public calls as
// HTTP requests; these are the hooks it needs into the scheduling state the core owns: a mark
// that a request is a batch line (background priority, the model's own defaults, a cap of
// lineCap tokens, outside --queue), the lane share batch lines take on a model's worker, and
// whether the server is shutting down.

// batchLineKey marks the context of a batch line's request; its value is the batch's id.
type batchLineKey struct{}

// AsBatchLine returns ctx marked as a request of a line of batch batchID (see prepare).
func AsBatchLine(ctx context.Context, batchID string) context.Context {
	return context.WithValue(ctx, batchLineKey{}, batchID)
}

// isBatchLine reports whether ctx is a batch line's request: it runs at background priority
// with the model's own defaults, not the operator's settings, and is capped at 2048 tokens
// when it names no cap.
func isBatchLine(ctx context.Context) bool {
	return ctx.Value(batchLineKey{}) != nil
}

// lineCap caps a batch line that names no max_tokens.
const lineCap = 2048

// DefaultMaxTokens is the completion cap of a request that names none: the operator's
// --max-tokens (0 fills the context), or 2048 for a batch line.
func (s *Service) DefaultMaxTokens(ctx context.Context) int {
	if isBatchLine(ctx) {
		return lineCap
	}
	return s.cfg.MaxTokens
}

// prepare fills in what a generation left unset and reserves its place on m. An interactive
// request takes the model's settings and the operator's --max-tokens, and counts against
// --queue. A batch line takes the model's own defaults (none of the operator's settings), at
// most 2048 tokens when it names no cap, background priority in the engine's queue, and never
// takes a place in the queue from an interactive request. Both settle the LoRA adapters the
// generation runs with (lora.go).
func (s *Service) prepare(ctx context.Context, m *Model, gen *llm.Request, n int) (release func(), err error) {
	if err := s.resolveAdapters(m, gen); err != nil {
		return nil, err
	}
	if !isBatchLine(ctx) {
		applySettings(gen, s.settingsOf(ctx, m))
		if gen.MaxTokens == 0 {
			gen.MaxTokens = s.cfg.MaxTokens
		}
		release, err := s.admit(m, n)
		if err != nil {
			return nil, err
		}
		w := m.sched()
		w.lanes.interactive()
		return func() {
			release()
			w.lanes.interactive()
		}, nil
	}
	if gen.MaxTokens == 0 {
		gen.MaxTokens = lineCap
	}
	gen.Priority = llm.PriorityBackground // queued interactive generations go first
	w := m.sched()
	w.background.Add(int64(n))
	return func() { w.background.Add(-int64(n)) }, nil
}

// TakeBatchLane waits for a share of m's worker's lanes for one batch line (see laneShare),
// or for stop or ctx to end (false). GiveBatchLane gives it back.
func (m *Model) TakeBatchLane(ctx context.Context, stop <-chan struct{}) bool {
	return m.sched().lanes.take(ctx, stop, max(m.Info().Parallel, 1))
}

// GiveBatchLane returns a share taken by TakeBatchLane.
func (m *Model) GiveBatchLane() { m.sched().lanes.give() }

// ShuttingDown reports whether the model manager has closed (the server's shutdown): no model
// loads any more, so a request that failed now says nothing about the request itself.
func (s *Service) ShuttingDown() bool {
	return s.mgr != nil && s.mgr.Closed()
}

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
