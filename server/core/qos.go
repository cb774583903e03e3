package core

import (
	"context"
	"sync"
	"time"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/core/qos"
)

// Scheduling classes (the x-superfluid-qos header). Every generation takes a grant of its
// model's lanes from the model's gate before it reaches the engine; while the lanes are busy,
// the gate grants them in class order, so the engine never queues and the order is the
// gate's:
//
//   - interactive (the default of chat, messages and Ollama requests) goes first, then
//     completion (the default of fill-in-the-middle), then agent, then background (the class of
//     batch lines);
//   - background gets a fair share: after FairShare-1 grants to higher classes that waited
//     for a lane while a background generation waited too, the next grant is background's
//     (the reserve below waived), so it never starves even when interactive requests keep
//     every lane busy;
//   - background never takes the last Reserve lanes of a model (one by default), so an
//     interactive request that arrives while background work runs finds a lane free and is
//     delayed by at most the engine's tick in progress, never by a whole background
//     generation. A model with a single lane cannot keep one free;
//   - a batch-invariant request (x-superfluid-batch-invariant) takes every lane of its model,
//     so its sequence ticks alone and its output does not depend on other traffic. It waits
//     for the lanes to empty and, meanwhile, later requests of its class or below wait behind it.
//
// Within a class, owners take turns (the person in team mode, else the key; see head), and
// one owner's requests go in arrival order; without keys that is arrival order. With
// OwnerReserve (team mode), no owner holds the last OwnerReserve lanes of a model while
// another has asked for a lane within the last minute, so that person's next request finds a
// lane free instead of waiting for a whole generation of someone else's; an owner alone gets
// every lane.

// FairShare is how often background work gets a lane while higher classes wait: at least one
// grant in FairShare.
const FairShare = 4

// QoSConfig tunes the scheduling classes.
type QoSConfig struct {
	// Gate reports whether generations wait for their model's lanes at the core's gate, granted
	// by class (the app sets it). Off, every generation goes straight to the engine, whose own
	// queue serves them first come, first served: the classes then change nothing (test
	// engines that run any number of generations at once rely on it).
	Gate bool
	// Reserve is how many lanes of a model background work never takes, so that interactive
	// requests find one free (default 1; negative for none). A model keeps at least one lane
	// for background work.
	Reserve int
	// OwnerReserve is how many lanes of a model one owner (a person, else a key) leaves free,
	// whatever their class, while another owner has asked for a lane within the last minute,
	// so that owner finds them free (team mode: 1). 0 for none; a model keeps at least one lane
	// for each owner, and an owner alone gets every lane. Requests without a key are never held
	// back.
	OwnerReserve int
}

func (c QoSConfig) reserve() int {
	switch {
	case c.Reserve < 0:
		return 0
	case c.Reserve == 0:
		return 1
	}
	return c.Reserve
}

// Scheduling is how a request asks to be scheduled.
type Scheduling struct {
	// QoS is the class; qos.Unset for the endpoint's default.
	QoS qos.Class
	// BatchInvariant asks for a lane that ticks alone (the request takes the whole model).
	BatchInvariant bool
}

type schedulingKey struct{}

// WithScheduling returns ctx carrying how its requests ask to be scheduled (the HTTP layer
// reads it from the x-superfluid-qos and x-superfluid-batch-invariant headers). A request's own
// QoS field, when set, wins over it.
func WithScheduling(ctx context.Context, s Scheduling) context.Context {
	return context.WithValue(ctx, schedulingKey{}, s)
}

// schedulingOf is the scheduling a generation runs with: req's own class, else the context's,
// else the endpoint's default; a batch line is always background. The class is lowered to the
// key's ceiling (the HTTP layer refuses a header above it with 403; a default above it is
// lowered, not refused).
func schedulingOf(ctx context.Context, req Scheduling, def qos.Class) Scheduling {
	s, _ := ctx.Value(schedulingKey{}).(Scheduling)
	if req.QoS != qos.Unset {
		s.QoS = req.QoS
	}
	s.BatchInvariant = s.BatchInvariant || req.BatchInvariant
	if s.QoS == qos.Unset {
		s.QoS = def
	}
	if id, ok := auth.FromContext(ctx); ok && id.QoS != qos.Unset && s.QoS > id.QoS {
		s.QoS = id.QoS
	}
	if isBatchLine(ctx) {
		s.QoS = qos.Background
	}
	return s
}

// withScheduling fixes the scheduling of the generation ctx runs.
func withScheduling(ctx context.Context, req Scheduling, def qos.Class) context.Context {
	return context.WithValue(ctx, schedulingKey{}, schedulingOf(ctx, req, def))
}

// qosGate hands out a model's lanes to generations in class order (see above). Its zero value
// is ready.
type qosGate struct {
	mu      sync.Mutex
	lanes   int // the model's lanes, as the last generation saw them
	used    int // lanes granted
	waiting [qos.Interactive + 1][]*qosWaiter
	// skipped counts grants to higher classes that had to wait while background work waited
	// too: background's fair share is counted in contended grants only, so requests that find
	// a lane free never hand background the lane kept for them.
	skipped int
	// served is when each owner (person, else key) was last granted, in grants (seq): within
	// a class the owner served longest ago goes first, so one person's 50 parallel requests
	// cannot starve another's one. Requests without keys share one owner: first come, first
	// served.
	served map[string]uint64
	seq    uint64
	// held is the lanes each owner holds now, for ownerReserve; seen is when each owner last
	// asked for a lane, so the reserve holds only while someone else is about.
	held         map[string]int
	seen         map[string]time.Time
	ownerReserve int
}

// ownerWindow is how recently another owner must have asked for a lane for the owner reserve
// to hold one back: a person alone on the server gets every lane.
const ownerWindow = time.Minute

type qosWaiter struct {
	units   int
	class   qos.Class
	owner   string        // fairOwner
	ready   chan struct{} // closed when granted
	granted bool
	queued  bool // not granted on arrival: it waits for a lane
}

// acquire waits for units of the model's lanes (lanes in all; reserve of them kept from
// background work) for a generation of class, or for ctx to end. It returns the function
// that gives them back and how long it waited. With lanes unknown (0) it grants at once.
func (g *qosGate) acquire(ctx context.Context, class qos.Class, units, lanes, reserve, ownerReserve int) (release func(), waited time.Duration, err error) {
	if lanes <= 0 {
		return func() {}, 0, nil
	}
	units = min(max(units, 1), lanes)
	class = min(max(class, qos.Background), qos.Interactive)
	w := &qosWaiter{units: units, class: class, owner: fairOwner(ctx), ready: make(chan struct{})}
	start := time.Now()
	g.mu.Lock()
	g.lanes, g.ownerReserve = lanes, ownerReserve
	g.see(w.owner, start)
	g.waiting[class] = append(g.waiting[class], w)
	g.dispatch(reserve)
	w.queued = !w.granted
	g.mu.Unlock()
	release = func() {
		g.mu.Lock()
		g.giveBack(w)
		g.dispatch(reserve)
		g.mu.Unlock()
	}
	select {
	case <-w.ready:
		return release, time.Since(start), nil
	case <-ctx.Done():
	}
	g.mu.Lock()
	if w.granted { // granted while ctx ended: give the lanes back
		g.giveBack(w)
	} else {
		g.remove(w)
	}
	g.dispatch(reserve) // the head of a queue may have changed
	g.mu.Unlock()
	return nil, time.Since(start), ctx.Err()
}

// dispatch grants lanes to waiting generations while the next in order fits. g.mu is held.
func (g *qosGate) dispatch(reserve int) {
	for {
		w := g.next(reserve)
		if w == nil {
			return
		}
		g.remove(w)
		g.seq++
		if g.served == nil {
			g.served = map[string]uint64{}
		}
		g.served[w.owner] = g.seq
		if w.class == qos.Background {
			g.skipped = 0
		} else if w.queued && len(g.waiting[qos.Background]) > 0 {
			g.skipped++
		}
		g.used += w.units
		if w.owner != "" {
			if g.held == nil {
				g.held = map[string]int{}
			}
			g.held[w.owner] += w.units
		}
		w.granted = true
		close(w.ready)
	}
}

// giveBack returns a granted waiter's lanes. g.mu is held.
func (g *qosGate) giveBack(w *qosWaiter) {
	g.used -= w.units
	if w.owner != "" {
		if g.held[w.owner] -= w.units; g.held[w.owner] <= 0 {
			delete(g.held, w.owner)
		}
	}
}

// capped reports whether granting w would have its owner hold more than the lanes less the
// owner reserve (at least one lane always) while another owner asked for a lane within
// ownerWindow. g.mu is held.
func (g *qosGate) capped(w *qosWaiter) bool {
	if g.ownerReserve <= 0 || w.owner == "" {
		return false
	}
	limit := max(g.lanes-g.ownerReserve, 1)
	if g.held[w.owner] == 0 || g.held[w.owner]+w.units <= limit {
		return false
	}
	for o := range g.seen {
		if o != w.owner {
			return true // see keeps only owners seen within the window
		}
	}
	return false
}

// see notes that owner asked for a lane at now, and forgets owners not seen within
// ownerWindow. g.mu is held.
func (g *qosGate) see(owner string, now time.Time) {
	if g.ownerReserve <= 0 || owner == "" {
		return
	}
	if g.seen == nil {
		g.seen = map[string]time.Time{}
	}
	g.seen[owner] = now
	for o, at := range g.seen {
		if now.Sub(at) > ownerWindow {
			delete(g.seen, o)
		}
	}
}

// next is the waiter to grant now, or nil. The head of the highest class waiting goes first
// when it fits; nothing jumps a head that does not fit yet (so a request for several lanes
// is not starved by single ones). Background goes when no one else waits and it leaves the
// reserve free, or when its fair share is due.
func (g *qosGate) next(reserve int) *qosWaiter {
	free := g.lanes - g.used
	bg := g.head(qos.Background)
	for c := qos.Interactive; c > qos.Background; c-- {
		if head := g.head(c); head != nil {
			if bg != nil && g.skipped >= FairShare-1 {
				return fits(bg, free) // background's turn: hold the lanes for it
			}
			return fits(head, free)
		}
	}
	if bg == nil {
		return nil
	}
	if bg.units < g.lanes { // a request for the whole model (batch-invariant) waives the reserve
		free -= min(reserve, g.lanes-1)
	}
	return fits(bg, free)
}

// head is the next of class c's waiters: the first of the owner served longest ago (never
// served counts as longest), so owners take turns; owners at their cap (capped) wait; nil
// when none waits. g.mu is held.
func (g *qosGate) head(c qos.Class) *qosWaiter {
	var best *qosWaiter
	for _, w := range g.waiting[c] {
		if g.capped(w) {
			continue
		}
		if best == nil || g.served[w.owner] < g.served[best.owner] {
			best = w
		}
	}
	return best
}

// remove takes w out of its class's queue, keeping the others' order. g.mu is held.
func (g *qosGate) remove(w *qosWaiter) {
	q := g.waiting[w.class]
	for i, o := range q {
		if o == w {
			g.waiting[w.class] = append(q[:i:i], q[i+1:]...)
			return
		}
	}
}

// fairOwner is who a generation is fair-shared as: the key's person in team mode, else the
// key; "" without keys (everyone one owner).
func fairOwner(ctx context.Context) string {
	id, ok := auth.FromContext(ctx)
	switch {
	case !ok || id == nil:
		return ""
	case id.Person != nil:
		return "person:" + id.Person.ID
	default:
		return "key:" + id.ID
	}
}

func fits(w *qosWaiter, free int) *qosWaiter {
	if w.units <= free {
		return w
	}
	return nil
}

// queued is how many generations wait at the gate, by class.
func (g *qosGate) queued() (n [qos.Interactive + 1]int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for c, q := range g.waiting {
		n[c] = len(q)
	}
	return n
}

// grant waits at m's gate for the lanes a generation of n choices needs on engine (all of them
// for a batch-invariant request), by the class of the request ctx belongs to. Background work
// also asks the engine for background priority, which orders the engine's own queue when the
// gate is off.
func (s *Service) grant(ctx context.Context, m *Model, engine interface{ Info() llm.ModelInfo }, gen *llm.Request, n int) (release func(), waited time.Duration, err error) {
	sched := schedulingOf(ctx, Scheduling{}, qos.Interactive)
	if sched.QoS == qos.Background {
		gen.Priority = llm.PriorityBackground
	}
	if !s.cfg.QoS.Gate {
		return func() {}, 0, nil
	}
	lanes := engine.Info().Parallel
	units := n
	if sched.BatchInvariant {
		units = lanes
	}
	return m.sched().gate.acquire(ctx, sched.QoS, units, lanes, s.cfg.QoS.reserve(), s.cfg.QoS.OwnerReserve)
}

// Waiting is how many generations wait at the model's gate for a lane.
func (m *Model) Waiting() int {
	n := 0
	for _, c := range m.sched().gate.queued() {
		n += c
	}
	return n
}
