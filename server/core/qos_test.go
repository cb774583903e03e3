package core

import (
	"context"
	"runtime"
	"slices"
	"testing"

	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/core/qos"
)

// gateRun drives a qosGate in a test: waiters join one at a time (each is queued before the
// next starts), and grants are handed out one at a time as the test releases lanes.
type gateRun struct {
	t            *testing.T
	g            *qosGate
	lanes        int
	reserve      int
	ownerReserve int
	granted      chan grantOf
}

type grantOf struct {
	name    string
	release func()
}

func newGateRun(t *testing.T, lanes, reserve int) *gateRun {
	return &gateRun{t: t, g: &qosGate{}, lanes: lanes, reserve: reserve, granted: make(chan grantOf, 64)}
}

// take acquires at once (the test knows there is room) and returns the release.
func (r *gateRun) take(class qos.Class, units int) func() {
	r.t.Helper()
	rel, _, err := r.g.acquire(context.Background(), class, units, r.lanes, r.reserve, r.ownerReserve)
	if err != nil {
		r.t.Fatal(err)
	}
	return rel
}

// join starts a waiter and returns once it is queued (or granted).
func (r *gateRun) join(ctx context.Context, name string, class qos.Class, units int) {
	before := r.g.queued()[class]
	got := make(chan struct{})
	go func() {
		rel, _, err := r.g.acquire(ctx, class, units, r.lanes, r.reserve, r.ownerReserve)
		if err == nil {
			r.granted <- grantOf{name, rel}
		}
		close(got)
	}()
	for r.g.queued()[class] == before {
		select {
		case <-got:
			return
		default:
			runtime.Gosched()
		}
	}
}

// order releases first, then each grant in turn, and returns the names in grant order.
func (r *gateRun) order(first func(), n int) []string {
	first()
	var names []string
	for range n {
		g := <-r.granted
		names = append(names, g.name)
		g.release()
	}
	return names
}

// TestQoSGateOrder: a busy model's lane goes to the highest class waiting, in arrival order
// within a class, and background gets one grant in FairShare while others wait.
func TestQoSGateOrder(t *testing.T) {
	type waiter struct {
		name  string
		class qos.Class
	}
	bg, ag, co, in := qos.Background, qos.Agent, qos.Completion, qos.Interactive
	tests := []struct {
		name    string
		waiters []waiter // in arrival order
		want    []string // grant order
	}{
		{"classes in order", []waiter{{"b", bg}, {"a", ag}, {"c", co}, {"i", in}}, []string{"i", "c", "a", "b"}},
		{"arrival order within a class", []waiter{{"i1", in}, {"b1", bg}, {"i2", in}, {"b2", bg}}, []string{"i1", "i2", "b1", "b2"}},
		{"background's fair share", []waiter{{"b1", bg}, {"b2", bg}, {"i1", in}, {"i2", in}, {"i3", in}, {"i4", in}, {"i5", in}, {"i6", in}, {"i7", in}},
			[]string{"i1", "i2", "i3", "b1", "i4", "i5", "i6", "b2", "i7"}},
		{"completion and agent share the fairness count", []waiter{{"b", bg}, {"c1", co}, {"a1", ag}, {"c2", co}, {"i", in}},
			[]string{"i", "c1", "c2", "b", "a1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newGateRun(t, 1, 1)
			hold := r.take(in, 1)
			for _, w := range tt.waiters {
				r.join(context.Background(), w.name, w.class, 1)
			}
			if got := r.order(hold, len(tt.waiters)); !slices.Equal(got, tt.want) {
				t.Fatalf("granted %v, want %v", got, tt.want)
			}
		})
	}
}

// TestQoSGateReserve: background work leaves the reserved lanes free, so an interactive request
// arriving while background work runs is granted at once; a single-lane model is shared.
func TestQoSGateReserve(t *testing.T) {
	tests := []struct {
		name           string
		lanes, reserve int
		wantBackground int // background generations granted at once
	}{
		{"one of four kept", 4, 1, 3},
		{"two of four kept", 4, 2, 2},
		{"no reserve", 4, -1, 4},
		{"a single lane is shared", 1, 1, 1},
		{"the reserve never takes every lane", 2, 5, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reserve := QoSConfig{Reserve: tt.reserve}.reserve()
			r := newGateRun(t, tt.lanes, reserve)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			for i := range tt.lanes + 2 {
				r.join(ctx, "b"+string(rune('0'+i)), qos.Background, 1)
			}
			granted := len(r.granted)
			if granted != tt.wantBackground {
				t.Fatalf("%d background generations granted, want %d", granted, tt.wantBackground)
			}
			if tt.wantBackground < tt.lanes {
				rel := r.take(qos.Interactive, 1) // granted at once, or take would block
				if q := r.g.queued(); q[qos.Interactive] != 0 {
					t.Fatalf("interactive queued: %v", q)
				}
				rel()
			}
		})
	}
}

// TestQoSGateUncontended: interactive requests that find the reserved lane free do not count
// toward background's fair share: however many come, the next one finds the lane free too.
func TestQoSGateUncontended(t *testing.T) {
	r := newGateRun(t, 2, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r.join(ctx, "b1", qos.Background, 1) // on a lane
	r.join(ctx, "b2", qos.Background, 1) // waits: the other lane is reserved
	for i := range 3 * FairShare {
		rel := r.take(qos.Interactive, 1) // granted at once, or take would block
		if q := r.g.queued(); q[qos.Interactive] != 0 || q[qos.Background] != 1 {
			t.Fatalf("interactive request %d: queued %v", i, q)
		}
		rel()
	}
	if len(r.granted) != 1 {
		t.Fatalf("%d background generations granted, want 1", len(r.granted))
	}
}

// TestQoSGateExclusive: a batch-invariant request (every lane) waits for the model to empty,
// runs alone, and keeps later requests of its class behind it; it waives the reserve.
func TestQoSGateExclusive(t *testing.T) {
	r := newGateRun(t, 4, 1)
	first := r.take(qos.Interactive, 1)
	r.join(context.Background(), "invariant", qos.Interactive, 4)
	r.join(context.Background(), "later", qos.Interactive, 1)
	if len(r.granted) != 0 {
		t.Fatal("granted while a lane was busy")
	}
	got := r.order(first, 2)
	if !slices.Equal(got, []string{"invariant", "later"}) {
		t.Fatalf("granted %v", got)
	}
	// A background batch-invariant request takes all four lanes despite the reserve.
	r.join(context.Background(), "bg-invariant", qos.Background, 4)
	g := <-r.granted
	if g.name != "bg-invariant" || r.g.used != 4 {
		t.Fatalf("%s granted, %d lanes used", g.name, r.g.used)
	}
	g.release()
}

// TestQoSGateCancel: a waiter whose request ends leaves the queue, and the lanes go on to the
// next; a gate of unknown lanes grants at once.
func TestQoSGateCancel(t *testing.T) {
	r := newGateRun(t, 1, 1)
	hold := r.take(qos.Interactive, 1)
	ctx, cancel := context.WithCancel(context.Background())
	r.join(ctx, "gone", qos.Interactive, 1)
	r.join(context.Background(), "next", qos.Background, 1)
	cancel()
	for r.g.queued()[qos.Interactive] != 0 {
		runtime.Gosched()
	}
	if got := r.order(hold, 1); !slices.Equal(got, []string{"next"}) {
		t.Fatalf("granted %v", got)
	}
	if r.g.used != 0 {
		t.Fatalf("%d lanes still used", r.g.used)
	}
	rel, _, err := (&qosGate{}).acquire(context.Background(), qos.Background, 3, 0, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	rel()
}

// TestSchedulingOf: the request's class wins over the context's, the endpoint's default fills
// in, a key's ceiling lowers it, and a batch line is background.
func TestSchedulingOf(t *testing.T) {
	bg, ag, co, in := qos.Background, qos.Agent, qos.Completion, qos.Interactive
	tests := []struct {
		name      string
		ctx       *Scheduling
		ceiling   qos.Class
		batchLine bool
		req       Scheduling
		def       qos.Class
		want      Scheduling
	}{
		{"default", nil, 0, false, Scheduling{}, in, Scheduling{QoS: in}},
		{"completion default", nil, 0, false, Scheduling{}, co, Scheduling{QoS: co}},
		{"from the header", &Scheduling{QoS: ag, BatchInvariant: true}, 0, false, Scheduling{}, in, Scheduling{QoS: ag, BatchInvariant: true}},
		{"the request's own wins", &Scheduling{QoS: ag}, 0, false, Scheduling{QoS: bg}, in, Scheduling{QoS: bg}},
		{"a default above the ceiling is lowered", nil, ag, false, Scheduling{}, in, Scheduling{QoS: ag}},
		{"below the ceiling stays", &Scheduling{QoS: bg}, co, false, Scheduling{}, in, Scheduling{QoS: bg}},
		{"a batch line is background", &Scheduling{QoS: in}, 0, true, Scheduling{}, in, Scheduling{QoS: bg}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			if tt.ctx != nil {
				ctx = WithScheduling(ctx, *tt.ctx)
			}
			if tt.ceiling != 0 {
				ctx = auth.NewContext(ctx, &auth.Identity{ID: "k", QoS: tt.ceiling})
			}
			if tt.batchLine {
				ctx = context.WithValue(ctx, batchLineKey{}, true)
			}
			if got := schedulingOf(ctx, tt.req, tt.def); got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}
