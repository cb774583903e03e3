package models

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/superfluid/superfluid/runtime/llm"
)

// Runner is one model's engine as the manager drives it: a worker client that loads on Start,
// frees everything on Unload (waiting for calls in flight) and can be started again.
type Runner interface {
	llm.Engine
	Start(ctx context.Context) error
	Unload(ctx context.Context) error
	Loaded() bool
	Slots(ctx context.Context) (llm.Slots, error)
}

// Config tunes the manager. Zero values take the defaults noted.
type Config struct {
	// NewRunner makes the runner of a catalog entry; vocabOnly asks for one that only tokenizes.
	NewRunner func(e *Entry, vocabOnly bool) Runner
	// ContextLength and Parallel are what workers load with (for the memory estimate);
	// ContextLength 0 means the model's own, at most 4096.
	ContextLength, Parallel int
	// KeepAlive is how long an idle model stays loaded (default 5m); negative: forever.
	KeepAlive time.Duration
	// MaxLoaded bounds the models loaded at once (0: no bound).
	MaxLoaded int
	// MemoryBudget bounds the estimated RAM of loaded models (0: 3/4 of the RAM available at start).
	MemoryBudget int64
	// LoadTimeout bounds one load (default 5m).
	LoadTimeout time.Duration
	// Backoff is the wait after a failed load before a request tries again (default 2s,
	// doubling per failure up to 5m). An explicit load does not wait.
	Backoff time.Duration
	// Crashed reports whether a call's error means the worker died during it.
	Crashed func(error) bool
	// Settings are a model's own settings (the desktop app's per-model settings); nil: none.
	Settings func(e *Entry) Settings
}

// Settings are what one model overrides of the server's defaults; zero values keep them.
type Settings struct {
	ContextLength, Lanes int
	KeepAlive            *time.Duration
	Runtime              string
}

// settings reads e's settings; callers may hold m.mu (the function is set before any load).
func (m *Manager) settings(e *Entry) Settings {
	fn := m.cfg.Settings
	if fn == nil {
		return Settings{}
	}
	return fn(e)
}

// Model states.
const (
	StateUnloaded  = "unloaded"
	StateLoading   = "loading"
	StateLoaded    = "loaded"
	StateUnloading = "unloading"
	StateFailed    = "failed"
	StateMissing   = "missing" // the file is gone from disk
)

// Manager loads catalog models on demand. It is safe for concurrent use.
type Manager struct {
	cfg    Config
	cat    *Catalog
	ctx    context.Context // loads run on it, not on the context of the request that asked
	cancel context.CancelFunc
	events *events

	mu    sync.Mutex
	slots map[string]*slot // by file path: ids that share a file share a worker
}

// slot is one model file's runtime state; fields below mu are guarded by Manager.mu.
type slot struct {
	path   string
	runner Runner
	vocab  Runner // a tokenizer-only worker, while the model is not loaded
	need   int64  // estimated RAM when loaded

	state    string
	done     chan struct{} // closes when a load or unload ends
	err      error         // the last load's failure
	failures int
	retryAt  time.Time
	force    bool // the next load ignores the backoff
	removed  bool

	inflight  int
	lastUsed  time.Time
	expiresAt time.Time // zero: never (or not idle)
	keepAlive time.Duration
	// defaultKeepAlive is the model's own keep-alive setting, or the server's.
	defaultKeepAlive time.Duration
	timer            *time.Timer
	crashes          map[[32]byte]int // prompt hash → workers it killed
}

// NewManager returns a manager over the catalog.
func NewManager(cat *Catalog, cfg Config) *Manager {
	if cfg.KeepAlive == 0 {
		cfg.KeepAlive = 5 * time.Minute
	}
	if cfg.LoadTimeout <= 0 {
		cfg.LoadTimeout = 5 * time.Minute
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = 2 * time.Second
	}
	if cfg.MemoryBudget == 0 {
		cfg.MemoryBudget = AvailableMemory() / 4 * 3
	}
	if cfg.Crashed == nil {
		cfg.Crashed = func(error) bool { return false }
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &Manager{cfg: cfg, cat: cat, ctx: ctx, cancel: cancel, events: newEvents(), slots: map[string]*slot{}}
	cat.mu.Lock()
	cat.loaded = m.live
	cat.mu.Unlock()
	return m
}

// live reports whether e's model is loaded or loading (a bare repository name means that one).
func (m *Manager) live(e *Entry) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.slots[e.Path]
	return ok && !s.removed && (s.state == StateLoaded || s.state == StateLoading)
}

// Catalog is the manager's catalog.
func (m *Manager) Catalog() *Catalog { return m.cat }

// Config is the manager's configuration with defaults filled in.
func (m *Manager) Config() Config { return m.cfg }

// Engine is the engine of a catalog entry: it loads the model when a generation needs it.
func (m *Manager) Engine(e *Entry) *Handle {
	return &Handle{m: m, entry: e, s: m.slot(e)}
}

func (m *Manager) slot(e *Entry) *slot {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.slots[e.Path]
	if !ok || s.removed {
		s = &slot{path: e.Path, runner: m.cfg.NewRunner(e, false), state: StateUnloaded, crashes: map[[32]byte]int{}}
		m.slots[e.Path] = s
	}
	set := m.settings(e)
	s.need = Estimate(e.Facts, m.contextLength(e), m.lanes(e))
	s.defaultKeepAlive = m.cfg.KeepAlive
	if set.KeepAlive != nil {
		s.defaultKeepAlive = *set.KeepAlive
	}
	return s
}

// lanes is how many lanes a worker for e runs.
func (m *Manager) lanes(e *Entry) int {
	if n := m.settings(e).Lanes; n > 0 {
		return n
	}
	return m.cfg.Parallel
}

// contextLength is the window a worker for e loads with.
func (m *Manager) contextLength(e *Entry) int {
	if n := m.settings(e).ContextLength; n > 0 {
		return n
	}
	if m.cfg.ContextLength > 0 {
		return m.cfg.ContextLength
	}
	if e.Facts.ContextLength > 0 {
		return min(e.Facts.ContextLength, 4096)
	}
	return 4096
}

// MemoryError says a model does not fit the memory budget even after evicting idle models.
type MemoryError struct {
	Model              string
	Need, Free, Budget int64
	Busy               []string // loaded models that could not be evicted (in use)
}

func (e *MemoryError) Error() string {
	msg := fmt.Sprintf("the model %s needs about %s of memory (weights + KV cache) but %s of the %s budget is free",
		e.Model, humanize.Bytes(uint64(e.Need)), humanize.Bytes(uint64(max(0, e.Free))), humanize.Bytes(uint64(e.Budget)))
	if len(e.Busy) > 0 {
		msg += fmt.Sprintf(" and %v are busy", e.Busy)
	}
	return msg + "; unload a model, lower --ctx or --parallel, or raise --memory-budget"
}

// Unwrap makes a MemoryError an engine failure (a 500 in the dialects: the server cannot run it now).
func (e *MemoryError) Unwrap() error { return llm.ErrEngineFailure }

// acquire makes sure s is loaded and counts one call in flight on it.
func (m *Manager) acquire(ctx context.Context, name string, s *slot, explicit bool) error {
	for {
		m.mu.Lock()
		if s.removed {
			m.mu.Unlock()
			return fmt.Errorf("%w: the model %q was deleted", llm.ErrModelNotFound, name)
		}
		switch s.state {
		case StateLoaded:
			s.inflight++
			s.stopTimer()
			m.mu.Unlock()
			return nil
		case StateLoading, StateUnloading:
			if err := m.waitTransition(ctx, s); err != nil {
				return err
			}
			continue
		}
		// Unloaded (or failed).
		if explicit {
			s.force = true
		}
		if s.err != nil && !s.force && time.Now().Before(s.retryAt) {
			err := s.err
			wait := time.Until(s.retryAt).Round(time.Second)
			m.mu.Unlock()
			return fmt.Errorf("%w (the load failed %d times; the next try is in %s, or load it explicitly)", err, s.failures, max(wait, time.Second))
		}
		victims, err := m.makeRoom(name, s)
		if err != nil {
			m.mu.Unlock()
			return err
		}
		s.state, s.done, s.force = StateLoading, make(chan struct{}), false
		m.mu.Unlock()
		m.events.publish(Event{Kind: EventLoading, Model: name})
		go m.load(name, s, victims)
	}
}

// waitTransition waits, without the lock (held on entry, released on return), for s's load or
// unload to end.
func (m *Manager) waitTransition(ctx context.Context, s *slot) error {
	done := s.done
	m.mu.Unlock()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// makeRoom picks the idle models to evict, least recently used first, so that s fits the
// budget and the loaded-models bound. It marks them unloading. Called with m.mu held.
func (m *Manager) makeRoom(name string, s *slot) ([]*slot, error) {
	var used int64
	count := 0
	var idle []*slot
	var busy []string
	for _, o := range m.slots {
		if o == s || o.state == StateUnloaded {
			continue
		}
		used += o.need
		count++
		if o.state == StateLoaded && o.inflight == 0 {
			idle = append(idle, o)
		} else {
			busy = append(busy, o.path)
		}
	}
	slices.SortFunc(idle, func(a, b *slot) int { return a.lastUsed.Compare(b.lastUsed) })
	var victims []*slot
	fits := func() bool {
		return (m.cfg.MemoryBudget <= 0 || used+s.need <= m.cfg.MemoryBudget) && (m.cfg.MaxLoaded <= 0 || count+1 <= m.cfg.MaxLoaded)
	}
	for !fits() && len(idle) > 0 {
		v := idle[0]
		idle = idle[1:]
		victims = append(victims, v)
		used -= v.need
		count--
	}
	if !fits() {
		if m.cfg.MaxLoaded > 0 && count+1 > m.cfg.MaxLoaded {
			return nil, fmt.Errorf("%w: %d models are loaded and busy (--max-loaded %d); retry when one is idle, or unload one", llm.ErrEngineFailure, count, m.cfg.MaxLoaded)
		}
		return nil, &MemoryError{Model: name, Need: s.need, Free: m.cfg.MemoryBudget - used, Budget: m.cfg.MemoryBudget, Busy: busy}
	}
	for _, v := range victims {
		v.state, v.done = StateUnloading, make(chan struct{})
		v.stopTimer()
	}
	return victims, nil
}

// load evicts the victims, then loads s on the manager's context, bounded by LoadTimeout.
func (m *Manager) load(name string, s *slot, victims []*slot) {
	for _, v := range victims {
		slog.Info("evicting an idle model to make room", "evicted", v.path, "for", name)
		m.finishUnload(context.Background(), v)
	}
	ctx, cancel := context.WithTimeout(m.ctx, m.cfg.LoadTimeout)
	defer cancel()
	err := s.runner.Start(ctx)
	m.mu.Lock()
	vocab := s.vocab
	if err != nil {
		s.state, s.err = StateUnloaded, err
		s.failures++
		s.retryAt = time.Now().Add(min(m.cfg.Backoff<<min(s.failures-1, 20), 5*time.Minute))
	} else {
		s.state, s.err, s.failures, s.vocab = StateLoaded, nil, 0, nil
		s.lastUsed = time.Now()
		s.keepAlive = s.defaultKeepAlive
		m.armTimer(s, s.keepAlive)
	}
	close(s.done)
	m.mu.Unlock()
	if err != nil {
		slog.Error("model failed to load", "model", name, "err", err)
		m.events.publish(Event{Kind: EventFailed, Model: name, Err: err.Error()})
		return
	}
	if vocab != nil {
		go vocab.Unload(context.Background())
	}
	m.events.publish(Event{Kind: EventLoaded, Model: name})
}

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
	if s.inflight == 0 && s.state == StateLoaded {
		m.armTimer(s, s.keepAlive)
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
		go m.expire(s)
		return
	}
	s.expiresAt = time.Now().Add(ka)
	s.timer = time.AfterFunc(ka, func() { m.expire(s) })
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
	if s.state != StateLoaded || s.inflight > 0 || s.expiresAt.IsZero() || time.Now().Before(s.expiresAt) {
		m.mu.Unlock()
		return
	}
	s.state, s.done = StateUnloading, make(chan struct{})
	s.stopTimer()
	m.mu.Unlock()
	m.finishUnload(context.Background(), s)
}

// finishUnload stops s's worker (waiting for calls in flight until ctx ends, then killing it)
// and marks it unloaded.
func (m *Manager) finishUnload(ctx context.Context, s *slot) {
	err := s.runner.Unload(ctx)
	if err != nil {
		slog.Warn("unload model", "model", s.path, "err", err)
	}
	m.mu.Lock()
	s.state = StateUnloaded
	close(s.done)
	m.mu.Unlock()
	m.events.publish(Event{Kind: EventUnloaded, Model: s.path})
}

// Load loads the named model now, ignoring the backoff of earlier failures.
func (m *Manager) Load(ctx context.Context, name string) (*Entry, error) {
	e, err := m.cat.Lookup(name)
	if err != nil {
		return nil, err
	}
	if e.Err != nil {
		return nil, fmt.Errorf("%w: the model %s cannot be used: %v", llm.ErrEngineFailure, e.ID, e.Err)
	}
	s := m.slot(e)
	if err := m.acquire(ctx, e.ID, s, true); err != nil {
		return nil, err
	}
	m.release(s, nil)
	return e, nil
}

// Unload unloads the named model now, after its calls in flight finish. Unloading a model that
// is not loaded does nothing.
func (m *Manager) Unload(ctx context.Context, name string) (*Entry, error) {
	e, err := m.cat.Lookup(name)
	if err != nil {
		return nil, err
	}
	return e, m.unloadSlot(ctx, m.slot(e))
}

func (m *Manager) unloadSlot(ctx context.Context, s *slot) error {
	for {
		m.mu.Lock()
		switch s.state {
		case StateLoaded:
			s.state, s.done = StateUnloading, make(chan struct{})
			s.stopTimer()
			m.mu.Unlock()
			m.finishUnload(ctx, s)
			return nil
		case StateLoading, StateUnloading:
			if err := m.waitTransition(ctx, s); err != nil {
				return err
			}
		default:
			vocab := s.vocab
			s.vocab = nil
			m.mu.Unlock()
			if vocab != nil {
				return vocab.Unload(ctx)
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
		if err := m.unloadSlot(ctx, s); err != nil {
			return e, false, err
		}
	}
	return e, deleteFile, nil
}

// Close unloads every model and stops the manager.
func (m *Manager) Close() error {
	m.cancel()
	m.mu.Lock()
	all := make([]*slot, 0, len(m.slots))
	for _, s := range m.slots {
		all = append(all, s)
	}
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Closing is quitting: a reply still running gets a second to end, then its worker
			// is killed and the request fails (and is recorded) rather than holding the exit.
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_ = m.unloadSlot(ctx, s)
			s.runner.Close()
		}()
	}
	wg.Wait()
	return nil
}

// Status is a model's runtime state.
type Status struct {
	// State is one of the State constants; failed and missing come with Err.
	State string
	// Err is why the model cannot load: its file is gone or damaged, or the last load failed.
	Err       error
	Need      int64     // estimated RAM loaded
	ExpiresAt time.Time // when an idle loaded model unloads; zero: not scheduled (busy or forever)
	Inflight  int
	LastUsed  time.Time
}

// Status reports e's runtime state.
func (m *Manager) Status(e *Entry) Status {
	s := m.slot(e)
	m.mu.Lock()
	defer m.mu.Unlock()
	st := Status{State: s.state, Need: s.need, ExpiresAt: s.expiresAt, Inflight: s.inflight, LastUsed: s.lastUsed}
	switch {
	case e.Err != nil: // the file is gone or damaged: no load can succeed
		st.State, st.Err = StateFailed, e.Err
		if e.Missing() {
			st.State = StateMissing
		}
	case s.state == StateUnloaded && s.err != nil:
		st.State, st.Err = StateFailed, s.err
	}
	return st
}

// Budget is the memory budget and what the loaded models are estimated to use.
func (m *Manager) Budget() (budget, used int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.slots {
		if s.state != StateUnloaded {
			used += s.need
		}
	}
	return m.cfg.MemoryBudget, used
}

// Reconfigure applies a model's changed settings: a loaded model unloads (after its requests in
// flight) and its next load uses them.
func (m *Manager) Reconfigure(ctx context.Context, e *Entry) error {
	s := m.slot(e)
	if err := m.unloadSlot(ctx, s); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s.state == StateUnloaded {
		old := s.runner
		s.runner = m.cfg.NewRunner(e, false)
		go old.Close()
	}
	return nil
}

// SetMemoryBudget changes the memory budget (the desktop app's settings; tests).
func (m *Manager) SetMemoryBudget(n int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cfg.MemoryBudget = n
}

// SetSettings installs where the manager reads each model's own settings (the core's store).
func (m *Manager) SetSettings(fn func(e *Entry) Settings) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cfg.Settings = fn
}
