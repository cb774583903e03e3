package hf

import (
	"context"
	"path/filepath"
	"sync"
)

// flight is one download of one destination file, shared by its callers.
type flight struct {
	done    chan struct{}
	err     error // set before done is closed
	cancel  context.CancelFunc
	waiters int  // guarded by Client.mu
	dropped bool // all waiters left; guarded by Client.mu

	emitMu sync.Mutex
	subs   map[*func(Progress)]struct{}
	last   *Progress
}

// emit sends p to every subscriber.
func (fl *flight) emit(p Progress) {
	fl.emitMu.Lock()
	defer fl.emitMu.Unlock()
	fl.last = &p
	for fn := range fl.subs {
		(*fn)(p)
	}
}

// subscribe adds fn and replays the latest progress to it.
func (fl *flight) subscribe(fn func(Progress)) *func(Progress) {
	if fn == nil {
		return nil
	}
	key := &fn
	fl.emitMu.Lock()
	defer fl.emitMu.Unlock()
	fl.subs[key] = struct{}{}
	if fl.last != nil {
		fn(*fl.last)
	}
	return key
}

func (fl *flight) unsubscribe(key *func(Progress)) {
	if key == nil {
		return
	}
	fl.emitMu.Lock()
	delete(fl.subs, key)
	fl.emitMu.Unlock()
}

// shared runs or joins the download of final.
func (c *Client) shared(ctx context.Context, repo, rev string, f RemoteFile, final string, progress func(Progress)) error {
	key, err := filepath.Abs(final)
	if err != nil {
		key = final
	}
	var fl *flight
	for {
		c.mu.Lock()
		fl = c.flights[key]
		if fl == nil || !fl.dropped {
			break
		}
		// Abandoned by its callers and stopping: wait, then start afresh.
		c.mu.Unlock()
		select {
		case <-fl.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if fl == nil {
		fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		fl = &flight{done: make(chan struct{}), cancel: cancel, subs: map[*func(Progress)]struct{}{}}
		c.flights[key] = fl
		go func() {
			err := c.fetch(fctx, repo, rev, f, final, fl.emit)
			c.mu.Lock()
			delete(c.flights, key)
			c.mu.Unlock()
			fl.err = err
			cancel()
			close(fl.done)
		}()
	}
	fl.waiters++
	c.mu.Unlock()

	sub := fl.subscribe(progress)
	defer fl.unsubscribe(sub)
	select {
	case <-fl.done:
		return fl.err
	case <-ctx.Done():
	}
	c.mu.Lock()
	fl.waiters--
	last := fl.waiters == 0
	if last {
		fl.dropped = true
		fl.cancel()
	}
	c.mu.Unlock()
	if last {
		// Stop promptly, but let the partial be closed before returning so
		// that a later call can resume it.
		<-fl.done
	}
	return ctx.Err()
}
