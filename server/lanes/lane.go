package lanes

import (
	"context"
	"sync"
	"time"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/store"
)

// Lane is one lane at run time: its row, the model it serves and the requests running on it.
//
// Draining is exact and race-free because every request enters the lane through its model's
// engine (gatedEngine.Acquire, which the core calls before it runs anything) under the lane's
// lock: a switch closes the served model under that lock, so a request either entered before
// (counted, and the switch waits for it) or is refused with model_switching; none slips
// between the count and the switch.
type Lane struct {
	mu      sync.Mutex
	row     store.Lane // row.Model is the model the lane serves or is switching to
	state   State
	failure error       // why the last start failed; nil while starting or serving
	cur     *served     // the model being served; nil while none is up
	old     *served     // the model draining during a switch; nil when none
	oldName string      // old's model name
	waiting *core.Model // what listings show while none is up: the target, refusing requests
	epoch   uint64      // bumped by every switch, so a superseded start does not install
	gone    bool        // removed (or the manager closed): a switch starts nothing any more
	cancel  context.CancelFunc
	done    chan struct{} // closed when the latest switch's work (drain, start) is over
	settled chan struct{} // closed when the latest switch serves, or failed its first start
}

// served is one model on a lane and the requests running on it.
type served struct {
	model    *core.Model // the factory's, with its engine gated
	release  func()
	inflight int
	closed   bool          // no request may enter any more
	drained  chan struct{} // closed once closed and inflight is 0
}

// Status is a lane as listings show it.
type Status struct {
	store.Lane
	State    State
	Inflight int
	// Error is why the engine failed to start, while it retries.
	Error string
}

func newLane(row store.Lane) *Lane {
	l := &Lane{row: row, state: Unavailable, done: make(chan struct{}), settled: make(chan struct{})}
	close(l.done)
	l.waiting = l.placeholder(row.Model)
	return l
}

// Name is the lane's name.
func (l *Lane) Name() string { return l.row.Name }

// Status is where the lane stands now.
func (l *Lane) Status() Status {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := Status{Lane: l.row, State: l.stateLocked()}
	for _, s := range []*served{l.cur, l.old} {
		if s != nil {
			st.Inflight += s.inflight
		}
	}
	if l.failure != nil {
		st.Error = l.failure.Error()
	}
	return st
}

// Settled is closed once the latest switch serves its model or failed its first start.
func (l *Lane) Settled() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.settled
}

// stateLocked is the lane's state, an unhealthy engine making a serving lane unavailable.
func (l *Lane) stateLocked() State {
	if l.state == Serving && l.cur != nil && !healthy(l.cur.model.Engine) {
		return Unavailable
	}
	return l.state
}

// serves reports whether the lane serves name or is switching to it: the model it is loading
// counts (the spec's "loaded or loading"), and so does the one draining, so that a client of the
// old model hears model_switching rather than model_not_loaded.
func (l *Lane) serves(name string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.row.Model == name || (l.old != nil && l.oldName == name)
}

// model is what the lane serves right now for a request, or the refusal while it cannot.
func (l *Lane) model() (*core.Model, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.refusalLocked(); err != nil {
		return nil, err
	}
	return l.cur.model, nil
}

// Model is what a listing shows of the lane: the model it serves, else a stand-in for the
// one it loads (which refuses requests with the lane's state).
func (l *Lane) Model() *core.Model {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cur != nil && !l.cur.closed {
		return l.cur.model
	}
	return l.waiting
}

// refusalLocked is why a request cannot run on the lane now; nil when it can.
func (l *Lane) refusalLocked() error {
	switch l.stateLocked() {
	case Switching:
		return switching(l.row.Name, l.row.Model)
	case Unavailable:
		return unavailable(l.row.Name, l.row.Model, l.failure)
	}
	return nil
}

// enter counts a request on s, or refuses it once s is closed or the lane cannot serve.
func (l *Lane) enter(s *served) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s.closed {
		return switching(l.row.Name, l.row.Model)
	}
	if err := l.refusalLocked(); err != nil {
		return err
	}
	s.inflight++
	return nil
}

// leave ends a request enter counted.
func (l *Lane) leave(s *served) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s.inflight--
	if s.closed && s.inflight == 0 {
		close(s.drained)
	}
}

// begin starts a switch to model ("" to stop serving): from now on new requests are refused
// with model_switching. It returns the switch's epoch and context, the model to drain (nil
// when none), the previous switch's done (to wait for) and this one's (to close).
func (l *Lane) begin(model string) (epoch uint64, ctx context.Context, old *served, prev, done chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cancel != nil {
		l.cancel() // a start still retrying is superseded
	}
	ctx, l.cancel = context.WithCancel(context.Background())
	l.epoch++
	if l.cur != nil {
		l.old, l.oldName = l.cur, l.cur.model.ID
	}
	if model != "" {
		l.row.Model = model
		l.waiting = l.placeholder(model)
	}
	l.state, l.failure = Switching, nil
	if l.cur == nil {
		l.state = Unavailable // nothing to drain: starting
	}
	old, l.cur = l.cur, nil
	if old != nil {
		old.closed = true
		if old.inflight == 0 {
			close(old.drained)
		}
	}
	prev, l.done = l.done, make(chan struct{})
	select {
	case <-l.settled:
		l.settled = make(chan struct{})
	default:
	}
	return l.epoch, ctx, old, prev, l.done
}

// end begins the lane's last switch, to nothing: it drains and releases its engine, and no
// later switch (one that raced the removal) starts another.
func (l *Lane) end() (epoch uint64, ctx context.Context, old *served, prev, done chan struct{}) {
	l.mu.Lock()
	l.gone = true
	l.mu.Unlock()
	return l.begin("")
}

// run drains old and starts the lane's model with build, retrying with backoff until it
// serves or a later switch supersedes this one (epoch). build nil only drains.
func (l *Lane) run(epoch uint64, ctx context.Context, old *served, prev, done chan struct{}, build EngineFactory, spec func(store.Lane) Spec) {
	defer close(done)
	<-prev // one switch at a time: the previous model is released before this one starts
	if old != nil {
		<-old.drained
		if old.release != nil {
			old.release()
		}
	}
	l.mu.Lock()
	if l.old == old {
		l.old, l.oldName = nil, ""
	}
	if l.epoch != epoch || l.gone {
		l.mu.Unlock()
		return
	}
	l.state = Unavailable
	row := l.row
	l.mu.Unlock()
	if build == nil {
		return
	}
	backoff := time.Second
	for {
		m, release, err := build(ctx, spec(row))
		l.mu.Lock()
		if l.epoch != epoch || l.gone {
			l.mu.Unlock()
			if err == nil && release != nil {
				release()
			}
			return
		}
		if err == nil {
			l.cur = &served{release: release, drained: make(chan struct{})}
			l.cur.model = l.wrap(m, l.cur)
			l.state, l.failure = Serving, nil
			l.settleLocked()
			l.mu.Unlock()
			return
		}
		l.failure = err
		l.settleLocked()
		l.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}

// settleLocked closes settled, once per switch.
func (l *Lane) settleLocked() {
	select {
	case <-l.settled:
	default:
		close(l.settled)
	}
}

// placeholder is the model a listing shows while the lane loads name: every request on it is
// refused with the lane's state.
func (l *Lane) placeholder(name string) *core.Model {
	tmpl, _ := chat.Parse("")
	return &core.Model{ID: name, Engine: &gatedEngine{lane: l}, Template: tmpl}
}

// wrap is src served on the lane: the same model with its engine gated by s.
func (l *Lane) wrap(src *core.Model, s *served) *core.Model {
	tmpl := src.Template
	if tmpl == nil {
		tmpl, _ = chat.Parse("")
	}
	id := src.ID
	if id == "" {
		id = l.row.Model
	}
	return &core.Model{ID: id, Path: src.Path, Engine: &gatedEngine{lane: l, served: s, inner: src.Engine}, Template: tmpl,
		BOS: src.BOS, EOS: src.EOS, ContextLength: src.ContextLength, FIM: src.FIM, Architecture: src.Architecture,
		Size: src.Size, Created: src.Created, Entry: src.Entry, EmbeddingFacts: src.EmbeddingFacts, Requests: src.Requests}
}

// healthy reports what an engine with a Healthy method says of itself; true for the others.
func healthy(e llm.Engine) bool {
	if g, ok := e.(*gatedEngine); ok {
		e = g.inner
	}
	if h, ok := e.(interface{ Healthy() bool }); ok {
		return h.Healthy()
	}
	return true
}

// gatedEngine is a lane's model's engine: the core acquires it before every generation and
// embedding (core's acquirer), which is where the lane counts the request in and out.
type gatedEngine struct {
	lane   *Lane
	served *served    // nil for a placeholder: every request is refused
	inner  llm.Engine // nil for a placeholder
}

var _ core.LaneReporter = (*gatedEngine)(nil)

// ServingLane is the lane's name and engine kind, for the request records. Both are fixed
// when the lane is made (a switch changes only its model), so no lock is needed.
func (g *gatedEngine) ServingLane() (lane, engine string) { return g.lane.row.Name, g.lane.row.Engine }

// acquirer is the core's on-demand engine (a catalog model's handle).
type acquirer interface {
	Acquire(ctx context.Context) (llm.Engine, func(keepAlive *time.Duration), error)
}

// Acquire counts the request on the lane until the returned done, or refuses it.
func (g *gatedEngine) Acquire(ctx context.Context) (llm.Engine, func(keepAlive *time.Duration), error) {
	if g.served == nil {
		g.lane.mu.Lock()
		err := g.lane.refusalLocked()
		g.lane.mu.Unlock()
		if err == nil {
			err = unavailable(g.lane.row.Name, g.lane.row.Model, nil)
		}
		return nil, nil, err
	}
	if err := g.lane.enter(g.served); err != nil {
		return nil, nil, err
	}
	engine, done := g.inner, func(*time.Duration) {}
	if a, ok := g.inner.(acquirer); ok {
		var err error
		if engine, done, err = a.Acquire(ctx); err != nil {
			g.lane.leave(g.served)
			return nil, nil, err
		}
	}
	return engine, func(keepAlive *time.Duration) {
		done(keepAlive)
		g.lane.leave(g.served)
	}, nil
}

func (g *gatedEngine) Info() llm.ModelInfo {
	if g.inner == nil {
		return llm.ModelInfo{}
	}
	return g.inner.Info()
}

func (g *gatedEngine) Tokenize(ctx context.Context, text string, addSpecial, parseSpecial bool) ([]int, error) {
	if g.inner == nil {
		_, _, err := g.Acquire(ctx)
		return nil, err
	}
	return g.inner.Tokenize(ctx, text, addSpecial, parseSpecial)
}

// Generate runs one generation counted on the lane (the core goes through Acquire instead).
func (g *gatedEngine) Generate(ctx context.Context, req *llm.Request, emit func(llm.Event) error) error {
	engine, done, err := g.Acquire(ctx)
	if err != nil {
		return err
	}
	defer done(nil)
	return engine.Generate(ctx, req, emit)
}

// Close does nothing: the lane releases its engine through the factory's release.
func (g *gatedEngine) Close() error { return nil }

// Loaded reports whether the inner engine is up.
func (g *gatedEngine) Loaded() bool {
	if l, ok := g.inner.(interface{ Loaded() bool }); ok {
		return l.Loaded()
	}
	return g.inner != nil
}

// Start loads the inner engine when it loads on demand.
func (g *gatedEngine) Start(ctx context.Context) error {
	if s, ok := g.inner.(interface{ Start(context.Context) error }); ok {
		return s.Start(ctx)
	}
	return nil
}

// Slots is the inner engine's lanes, when it reports them.
func (g *gatedEngine) Slots(ctx context.Context) (llm.Slots, error) {
	if r, ok := g.inner.(llm.SlotsReporter); ok {
		return r.Slots(ctx)
	}
	return llm.Slots{}, nil
}
