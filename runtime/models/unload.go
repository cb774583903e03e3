package models

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Unloading. A model unloads when its keep-alive runs out, when another needs the room, when an
// admin asks, when its settings change or it is deleted, and when the manager closes. Each
// unload drains first: the requests that acquired the model (those waiting at the core's QoS
// gate for a lane included) finish, for up to Config.DrainTimeout; then whatever still holds
// the model is cut (stopped, or refused before it reaches the worker, with ErrUnloaded), and
// only once no call is on the runner is the worker stopped. The drain runs on a goroutine of
// the manager's: the caller of Unload may give up waiting, the unload goes on.

// closeDrain is how long a reply still running gets when the manager closes: closing is
// quitting, and a reply is failed (and recorded) rather than hold the exit.
const closeDrain = time.Second

// cutGrace is how long calls that were cut get to leave the runner before the worker is
// stopped anyway (the worker client ends a cut call at once; a runner that ignores its
// context is bounded here).
const cutGrace = 5 * time.Second

// release ends one call on s and starts its keep-alive: keepAlive, or the default when nil.
func (m *Manager) release(s *slot, keepAlive *time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ka := s.defaultKeepAlive
	if keepAlive != nil {
		ka = *keepAlive
	}
	s.keepAlive = ka
	m.releaseLocked(s)
}

// releaseLocked ends one call on s and, when it was the last, re-arms the keep-alive.
func (m *Manager) releaseLocked(s *slot) {
	s.inflight--
	s.lastUsed = time.Now()
	s.wakeLocked()
	if s.inflight == 0 && s.state == StateLoaded && !m.closed {
		m.armTimer(s, s.keepAlive)
	}
}

// wakeLocked wakes whoever waits for s's requests to drain. Called with m.mu held.
func (s *slot) wakeLocked() {
	if s.wake != nil {
		close(s.wake)
		s.wake = nil
	}
}

// waitFor waits until cond (read with m.mu held) holds, or ctx ends (false).
func (m *Manager) waitFor(ctx context.Context, s *slot, cond func() bool) bool {
	for {
		m.mu.Lock()
		if cond() {
			m.mu.Unlock()
			return true
		}
		if s.wake == nil {
			s.wake = make(chan struct{})
		}
		wake := s.wake
		m.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return false
		}
	}
}

// armTimer schedules an idle loaded s to unload after ka (0: now; negative: never). Called with
// m.mu held.
func (m *Manager) armTimer(s *slot, ka time.Duration) {
	s.stopTimer()
	if ka < 0 {
		return
	}
	if ka == 0 {
		// Unload now, outside the caller's lock.
		s.expiresAt = time.Now()
		m.spawnLocked(func() { m.expire(s) })
		return
	}
	s.expiresAt = time.Now().Add(ka)
	s.timer = time.AfterFunc(ka, func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if !m.closed {
			m.spawnLocked(func() { m.expire(s) })
		}
	})
}

func (s *slot) stopTimer() {
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	s.expiresAt = time.Time{}
}

// expire unloads s when its keep-alive ran out while it was idle.
func (m *Manager) expire(s *slot) {
	m.mu.Lock()
	if m.closed || s.state != StateLoaded || s.inflight > 0 || s.expiresAt.IsZero() || time.Now().Before(s.expiresAt) {
		m.mu.Unlock()
		return
	}
	s.state, s.done = StateUnloading, make(chan struct{})
	s.stopTimer()
	m.mu.Unlock()
	m.finishUnload(s, m.cfg.DrainTimeout)
}

// finishUnload drains s (marked unloading by the caller), cuts what still holds it, stops its
// worker and marks it unloaded.
func (m *Manager) finishUnload(s *slot, drain time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	// Closing hurries a drain in progress: it gets what Close's own drains get.
	hurry := context.AfterFunc(m.ctx, func() { time.AfterFunc(closeDrain, cancel) })
	defer hurry()
	if !m.waitFor(ctx, s, func() bool { return s.inflight == 0 }) {
		slog.Warn("the model's requests did not finish within the unload's drain; stopping them", "model", s.path, "drain", drain)
	}
	// Under the lock, so that a call either got on the runner before the cut (and is counted
	// in calls, and stopped by it) or sees the cut and is refused.
	m.mu.Lock()
	if s.cut != nil {
		s.cut(ErrUnloaded)
	}
	m.mu.Unlock()
	grace, stop := context.WithTimeout(context.Background(), cutGrace)
	m.waitFor(grace, s, func() bool { return s.calls == 0 })
	stop()
	if err := s.runner.Unload(ctx); err != nil {
		slog.Warn("unload model", "model", s.path, "err", err)
	}
	m.mu.Lock()
	s.state, s.live, s.cut = StateUnloaded, nil, nil
	removed := s.removed
	var old Runner
	if e := s.reconfigure; e != nil && !removed {
		old, s.runner, s.projector = s.runner, m.cfg.NewRunner(e, false), e.Projector
	}
	s.reconfigure = nil
	close(s.done)
	m.mu.Unlock()
	if old != nil {
		old.Close()
	}
	if removed {
		s.runner.Close() // no one can reach it any more
	}
	m.events.publish(Event{Kind: EventUnloaded, Model: s.path})
}

// Unload unloads the named model now, after its calls in flight finish (for up to the drain
// timeout). Unloading a model that is not loaded does nothing. If ctx ends first, Unload
// returns its error and the unload goes on.
func (m *Manager) Unload(ctx context.Context, name string) (*Entry, error) {
	e, err := m.cat.Lookup(name)
	if err != nil {
		return nil, err
	}
	return e, m.unloadSlot(ctx, m.slot(e), unloadHow{})
}

// UnloadWithin is Unload with its own drain: the model's requests in flight get up to drain
// (instead of Config.DrainTimeout), then are stopped. The desktop app's Stop gives them a
// second, as quitting does.
func (m *Manager) UnloadWithin(ctx context.Context, name string, drain time.Duration) (*Entry, error) {
	e, err := m.cat.Lookup(name)
	if err != nil {
		return nil, err
	}
	return e, m.unloadSlot(ctx, m.slot(e), unloadHow{drain: drain})
}

// unloadHow says what else an unload does.
type unloadHow struct {
	// entry, when set, replaces the runner once the model is unloaded.
	entry *Entry
	// closing is Close's own unload: a short drain, and it runs although the manager is closed.
	closing bool
	// drain, when positive, replaces Config.DrainTimeout.
	drain time.Duration
}

// unloadSlot unloads s on the manager's goroutine and waits for it, or for ctx.
func (m *Manager) unloadSlot(ctx context.Context, s *slot, how unloadHow) error {
	drain := m.cfg.DrainTimeout
	if how.drain > 0 {
		drain = how.drain
	}
	if how.closing {
		drain = closeDrain
	}
	for {
		m.mu.Lock()
		if m.closed && !how.closing {
			m.mu.Unlock()
			return ErrClosed // Close unloads everything itself
		}
		switch s.state {
		case StateLoaded:
			s.state, s.done = StateUnloading, make(chan struct{})
			s.stopTimer()
			s.reconfigure = how.entry
			m.spawnLocked(func() { m.finishUnload(s, drain) })
			return m.waitTransition(ctx, s)
		case StateLoading, StateUnloading:
			if err := m.waitTransition(ctx, s); err != nil {
				return err
			}
		default:
			vocab := s.vocab
			s.vocab = nil
			var old Runner
			if how.entry != nil && !s.removed {
				old, s.runner, s.projector = s.runner, m.cfg.NewRunner(how.entry, false), how.entry.Projector
			}
			m.mu.Unlock()
			if old != nil {
				old.Close()
			}
			if vocab != nil {
				retire(vocab)
			}
			return nil
		}
	}
}

// Remove deletes the named model from the catalog after unloading it (calls in flight finish
// first), and reports whether its file may be deleted.
func (m *Manager) Remove(ctx context.Context, name string) (*Entry, bool, error) {
	e, deleteFile, err := m.cat.Remove(ctx, name)
	if err != nil {
		return nil, false, err
	}
	lastUser := true
	for _, other := range m.cat.List() {
		lastUser = lastUser && other.Path != e.Path
	}
	m.mu.Lock()
	s, ok := m.slots[e.Path]
	if ok && lastUser {
		s.removed = true
		delete(m.slots, e.Path)
	}
	m.mu.Unlock()
	if ok && lastUser {
		if err := m.unloadSlot(ctx, s, unloadHow{}); err != nil {
			return e, false, err
		}
	}
	return e, deleteFile, nil
}

// Reconfigure applies a model's changed settings: a loaded model unloads (after its requests in
// flight) and its next load uses them.
func (m *Manager) Reconfigure(ctx context.Context, e *Entry) error {
	return m.unloadSlot(ctx, m.slot(e), unloadHow{entry: e})
}

// Closed reports whether Close was called: every load is refused with ErrClosed.
func (m *Manager) Closed() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.closed
}

// Close refuses loads from now on, unloads every model (a reply still running gets a second,
// then is stopped) and returns once none of the manager's workers or goroutines is left.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		<-m.closeDone
		return nil
	}
	m.closed = true
	defer close(m.closeDone)
	m.cancel() // loads in progress are called off
	all := make([]*slot, 0, len(m.slots))
	for _, s := range m.slots {
		s.stopTimer()
		all = append(all, s)
	}
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = m.unloadSlot(context.Background(), s, unloadHow{closing: true})
			m.mu.Lock()
			vocab, r := s.vocab, s.runner
			s.vocab = nil
			m.mu.Unlock()
			if vocab != nil {
				vocab.Close()
			}
			r.Close()
		}()
	}
	wg.Wait()
	m.wg.Wait()
	return nil
}
