package models

import (
	"context"
	"fmt"
	"log/slog"
	"os"
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
	// doubling per failure up to 5m). An explicit load does not wait, but tries once.
	Backoff time.Duration
	// DrainTimeout bounds how long an unload (or a settings change, or a delete) waits for the
	// model's requests in flight before it stops them with ErrUnloaded (default 2m). The
	// drain runs on the manager's own clock: the caller of Unload going away does not end it.
	DrainTimeout time.Duration
	// Crashed reports whether a call's error means the worker died during it.
	Crashed func(error) bool
}

// Settings are what one model overrides of the server's defaults; zero values keep them.
type Settings struct {
	ContextLength, Lanes int
	KeepAlive            *time.Duration
	Runtime              string
	// Speculative (off, ngram, draft; "" for the server's default), DraftModelPath (a GGUF file
	// with the model's vocabulary), DraftTokens (0: the engine's default) and FlashAttention
	// (on, off, auto; "" is auto) are what the model's worker starts with.
	Speculative    string
	DraftModelPath string
	DraftTokens    int
	FlashAttention string
}

// SetSettings records a model's own settings. Its owner (the core, which keeps them in the
// store) hands them over at start and at each change; the manager never asks for them. A
// window, lane count or runtime applies from the model's next load (Reconfigure unloads it so
// that it does); zero settings forget the model's.
func (m *Manager) SetSettings(id string, set Settings) {
	m.setMu.Lock()
	defer m.setMu.Unlock()
	if set == (Settings{}) {
		delete(m.settings, id)
		return
	}
	m.settings[id] = set
}

// Settings are the model's own settings as last handed over (zero: none). The runner factory
// reads them here: it may, since they have their own lock (it is called with m.mu held).
func (m *Manager) Settings(id string) Settings {
	m.setMu.Lock()
	defer m.setMu.Unlock()
	return m.settings[id]
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

// ErrClosed refuses every load once the manager is closed (the server is shutting down): no
// worker is started and nothing is logged, so a caller that retries cannot spin on it.
var ErrClosed = fmt.Errorf("%w: the server is shutting down", llm.ErrEngineFailure)

// ErrUnloaded is the error of a request that had the model but had not finished when an
// unload's drain ended (or it waited for a lane across the unload): it is stopped, or refused
// before it reaches the worker, rather than start a worker the manager does not know.
var ErrUnloaded = fmt.Errorf("%w: the model was unloaded", llm.ErrEngineFailure)

// Manager loads catalog models on demand. It is safe for concurrent use.
type Manager struct {
	cfg    Config
	cat    *Catalog
	ctx    context.Context // loads run on it, not on the context of the request that asked
	cancel context.CancelFunc
	events *events
	// wg counts the manager's own goroutines (loads, unloads, expiries), so that none
	// outlives Close. Add is called with mu held and closed false, or by Close itself.
	wg sync.WaitGroup

	mu        sync.Mutex
	closed    bool
	closeDone chan struct{}    // closed when Close has returned
	slots     map[string]*slot // by file path: ids that share a file share a worker

	// settings are each model's own settings by id (SetSettings), under their own lock so
	// that they can be read with mu held or not.
	setMu    sync.Mutex
	settings map[string]Settings

	fetch fetcher // brings back a missing file before a load (SetFetch)
	gate  loadGate
}

// slot is one model file's runtime state; fields below mu are guarded by Manager.mu.
type slot struct {
	path   string
	runner Runner
	vocab  Runner // a tokenizer-only worker, while the model is not loaded
	need   int64  // estimated RAM when loaded
	// projector is the multimodal projector the runner was made with ("" none), checked
	// against the model before each load.
	projector string

	state    string
	done     chan struct{} // closes when a load or unload ends
	err      error         // the last load's failure
	failures int
	retryAt  time.Time
	force    bool // the next load ignores the backoff
	removed  bool

	// inflight counts the requests that acquired the model (until their release), calls
	// those of them on the runner now. An unload waits for inflight to drain, then cuts live
	// and waits for calls to end before it stops the worker, so nothing that acquired the
	// model can reach the runner once it is unloaded (the worker client would start a new
	// worker on demand, one the manager does not know).
	inflight int
	calls    int
	wake     chan struct{} // closed when inflight or calls drops; nil when no one waits
	live     context.Context
	cut      context.CancelCauseFunc
	// reconfigure, when set, replaces the runner for this entry once the model is unloaded.
	reconfigure *Entry

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
	if cfg.DrainTimeout <= 0 {
		cfg.DrainTimeout = 2 * time.Minute
	}
	if cfg.MemoryBudget == 0 {
		cfg.MemoryBudget = AvailableMemory() / 4 * 3
	}
	if cfg.Crashed == nil {
		cfg.Crashed = func(error) bool { return false }
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &Manager{cfg: cfg, cat: cat, ctx: ctx, cancel: cancel, events: newEvents(), slots: map[string]*slot{}, closeDone: make(chan struct{}),
		settings: map[string]Settings{}}
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
	if ok && !s.removed && !m.closed && s.projector != e.Projector && s.state == StateUnloaded {
		// The entry got another projector (superfluid add --mmproj beside a running server):
		// the runner's worker options name the old one, and no call holds an unloaded runner.
		old := s.runner
		s.runner, s.projector = m.cfg.NewRunner(e, false), e.Projector
		m.spawnLocked(func() { old.Close() })
	}
	if !ok || s.removed {
		s = &slot{path: e.Path, runner: m.cfg.NewRunner(e, false), projector: e.Projector, state: StateUnloaded, crashes: map[[32]byte]int{}}
		m.slots[e.Path] = s
	}
	set := m.Settings(e.ID)
	s.need = Estimate(e.Facts, m.contextLength(e), m.lanes(e)) + draftBytes(set.DraftModelPath)
	s.defaultKeepAlive = m.cfg.KeepAlive
	if set.KeepAlive != nil {
		s.defaultKeepAlive = *set.KeepAlive
	}
	return s
}

// draftBytes is what a draft model loaded beside a model adds to its worker: its weights (the
// file's size; its small context is within the estimate's overhead). 0 without one, or when
// the file cannot be read (the load then fails and says so).
func draftBytes(path string) int64 {
	if path == "" {
		return 0
	}
	st, err := os.Stat(path)
	if err != nil || !st.Mode().IsRegular() {
		return 0
	}
	return st.Size()
}

// lanes is how many lanes a worker for e runs.
func (m *Manager) lanes(e *Entry) int {
	if n := m.Settings(e.ID).Lanes; n > 0 {
		return n
	}
	return m.cfg.Parallel
}

// contextLength is the window a worker for e loads with.
func (m *Manager) contextLength(e *Entry) int {
	if n := m.Settings(e.ID).ContextLength; n > 0 {
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

// acquire makes sure s is loaded and counts one call in flight on it. It returns the runner
// and the lifetime of the loaded worker the call may use (see slot.live).
func (m *Manager) acquire(ctx context.Context, name string, s *slot, explicit bool) (Runner, context.Context, error) {
	waited := false // this caller waited for a load: if it failed, that is the answer
	for {
		m.mu.Lock()
		if m.closed {
			m.mu.Unlock()
			return nil, nil, ErrClosed
		}
		if s.removed {
			m.mu.Unlock()
			return nil, nil, fmt.Errorf("%w: the model %q was deleted", llm.ErrModelNotFound, name)
		}
		switch s.state {
		case StateLoaded:
			s.inflight++
			s.stopTimer()
			r, live := s.runner, s.live
			m.mu.Unlock()
			return r, live, nil
		case StateLoading, StateUnloading:
			waited = waited || s.state == StateLoading
			if err := m.waitTransition(ctx, s); err != nil {
				return nil, nil, err
			}
			continue
		}
		// Unloaded (or failed).
		if waited && s.err != nil {
			// The load this caller waited for (or started) failed: an explicit load tries once,
			// it does not loop on a model that cannot load.
			err := withoutPaths(s.err, s.path, m.cat.Dir())
			m.mu.Unlock()
			return nil, nil, err
		}
		if explicit {
			s.force = true
		}
		if s.err != nil && !s.force && time.Now().Before(s.retryAt) {
			err := withoutPaths(s.err, s.path, m.cat.Dir())
			wait := time.Until(s.retryAt).Round(time.Second)
			m.mu.Unlock()
			return nil, nil, fmt.Errorf("%w (the load failed %d times; the next try is in %s, or load it explicitly)", err, s.failures, max(wait, time.Second))
		}
		if err := m.gate.check(name); err != nil {
			m.mu.Unlock()
			return nil, nil, err
		}
		victims, err := m.makeRoom(name, s)
		if err != nil {
			m.mu.Unlock()
			return nil, nil, err
		}
		s.state, s.done, s.force = StateLoading, make(chan struct{}), false
		m.spawnLocked(func() { m.load(name, s, victims) })
		m.mu.Unlock()
		m.events.publish(Event{Kind: EventLoading, Model: name})
	}
}

// spawnLocked runs fn on a goroutine Close waits for. Called with m.mu held.
func (m *Manager) spawnLocked(fn func()) {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		fn()
	}()
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
		m.finishUnload(v, m.cfg.DrainTimeout)
	}
	ctx, cancel := context.WithTimeout(m.ctx, m.cfg.LoadTimeout)
	defer cancel()
	_, err := m.fetchMissing(ctx, s.path) // a request's load of a file kept elsewhere
	if err == nil && s.projector != "" {
		// Said here, naming both files, before a worker starts and the engine refuses them. A
		// projector kept elsewhere is named by its base name, as the model is (withoutPaths).
		err = withoutPaths(checkProjector(s.path, s.projector), s.projector, "")
	}
	if err == nil {
		err = s.runner.Start(ctx)
	}
	m.mu.Lock()
	vocab := s.vocab
	closed := m.closed
	switch {
	case err != nil && closed:
		// Called off by Close: not a failure of the model, and nothing to retry.
		s.state = StateUnloaded
	case err != nil:
		s.state, s.err = StateUnloaded, err
		s.failures++
		s.retryAt = time.Now().Add(min(m.cfg.Backoff<<min(s.failures-1, 20), 5*time.Minute))
	default:
		s.state, s.err, s.failures, s.vocab = StateLoaded, nil, 0, nil
		s.live, s.cut = context.WithCancelCause(context.Background())
		s.lastUsed = time.Now()
		s.keepAlive = s.defaultKeepAlive
		if !closed {
			m.armTimer(s, s.keepAlive)
		}
		if vocab != nil {
			m.spawnLocked(func() { retire(vocab) })
		}
	}
	close(s.done)
	m.mu.Unlock()
	switch {
	case err != nil && closed:
	case err != nil:
		slog.Error("model failed to load", "model", name, "err", err)
		m.events.publish(Event{Kind: EventFailed, Model: name, Err: err.Error()})
	default:
		m.events.publish(Event{Kind: EventLoaded, Model: name})
	}
}

// retire stops a runner for good: its calls in flight finish first (bounded), then it is
// closed, so that a call that still holds it fails instead of starting a worker no one owns.
func retire(r Runner) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_ = r.Unload(ctx)
	r.Close()
}

// Load loads the named model now, ignoring the backoff of earlier failures.
func (m *Manager) Load(ctx context.Context, name string) (*Entry, error) {
	e, err := m.cat.Lookup(name)
	if err != nil {
		return nil, err
	}
	if e.Missing() {
		if err := m.gate.check(e.ID); err != nil { // before a download the gate would refuse after
			return nil, err
		}
		if fetched, err := m.fetchMissing(ctx, e.Path); err != nil {
			return nil, fmt.Errorf("%w: the model %s: fetching its file: %v", llm.ErrEngineFailure, e.ID, err)
		} else if fetched {
			e = m.cat.Refresh(e)
		}
	}
	if e.Err != nil {
		return nil, fmt.Errorf("%w: the model %s cannot be used: %v", llm.ErrEngineFailure, e.ID, withoutPaths(e.Err, e.Path, m.cat.Dir()))
	}
	s := m.slot(e)
	if _, _, err := m.acquire(ctx, e.ID, s, true); err != nil {
		return nil, err
	}
	m.release(s, nil)
	return e, nil
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

// SetMemoryBudget changes the memory budget (the desktop app's settings; tests).
func (m *Manager) SetMemoryBudget(n int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cfg.MemoryBudget = n
}
