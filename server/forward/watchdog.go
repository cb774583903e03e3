package forward

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// watchdog cancels a request whose upstream stalls: first HeaderTimeout for the reply to start
// (headers, then the first read of the body), then IdleTimeout for each read after.
type watchdog struct {
	mu    sync.Mutex
	timer *time.Timer
	idle  time.Duration
	begun bool // the reply started: the idle bound applies
}

// watch is ctx with a watchdog over it: the request is cancelled, with a 502 upstream_error as
// its cause, when the upstream stalls.
func (e *Engine) watch(ctx context.Context) (context.Context, *watchdog, context.CancelCauseFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	w := &watchdog{idle: e.cfg.IdleTimeout}
	late := broken(e.base, fmt.Sprintf("did not start its reply within %s (stalled)", e.cfg.HeaderTimeout))
	stalled := broken(e.base, fmt.Sprintf("sent nothing for %s (stalled)", e.cfg.IdleTimeout))
	w.timer = time.AfterFunc(e.cfg.HeaderTimeout, func() {
		w.mu.Lock()
		cause := late
		if w.begun {
			cause = stalled
		}
		w.mu.Unlock()
		cancel(cause)
	})
	return ctx, w, cancel
}

// started says the upstream sent something: the next wait is bounded by the idle timeout.
func (w *watchdog) started() {
	w.mu.Lock()
	w.begun = true
	w.mu.Unlock()
	w.timer.Reset(w.idle)
}

// Stop ends the watch.
func (w *watchdog) Stop() { w.timer.Stop() }
