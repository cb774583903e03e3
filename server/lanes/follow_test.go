package lanes_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/superfluid/superfluid/server/lanes"
)

// clock is the in-memory bookings as a lanes.BookingClock.
type clock struct {
	*bookings
	cmu     sync.Mutex
	changed chan struct{}
	nexts   int // Next calls: the follower re-reads only on a timer or a change
}

func newClock(b *bookings) *clock { return &clock{bookings: b, changed: make(chan struct{})} }

func (c *clock) Next(_ context.Context, now time.Time) (time.Time, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cmu.Lock()
	c.nexts++
	c.cmu.Unlock()
	var at time.Time
	for _, r := range c.list {
		for _, t := range []time.Time{r.Start, r.End} {
			if t.After(now) && (at.IsZero() || t.Before(at)) {
				at = t
			}
		}
	}
	return at, !at.IsZero(), nil
}

func (c *clock) Changed() <-chan struct{} {
	c.cmu.Lock()
	defer c.cmu.Unlock()
	return c.changed
}

// change sets the bookings and signals it.
func (c *clock) change(rs ...lanes.Reservation) {
	c.set(rs...)
	c.cmu.Lock()
	close(c.changed)
	c.changed = make(chan struct{})
	c.cmu.Unlock()
}

func (c *clock) reads() int {
	c.cmu.Lock()
	defer c.cmu.Unlock()
	return c.nexts
}

type switchRecord struct{ lane, model, person string }

// TestBookingSwitchesLaneAtItsStart: a booking made now that starts in about a second with a
// model leaves the lane alone until its start, switches it then (audited once), and the lane
// keeps that model after the booking ends.
func TestBookingSwitchesLaneAtItsStart(t *testing.T) {
	b := newBench(t)
	l := b.add("main", "cuda:0", "alpha")
	c := newClock(b.booked)
	var mu sync.Mutex
	var audited []switchRecord
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go b.mgr.FollowBookings(ctx, c, func(_ context.Context, lane, model string, r lanes.Reservation) {
		mu.Lock()
		audited = append(audited, switchRecord{lane, model, r.PersonID})
		mu.Unlock()
	})
	start := time.Now().Add(time.Second)
	end := start.Add(700 * time.Millisecond)
	c.change(lanes.Reservation{Lane: "main", Device: "cuda:0", PersonID: "key-alice", Model: "beta", Start: start, End: end})

	time.Sleep(time.Until(start) - 300*time.Millisecond)
	if st := l.Status(); st.Model != "alpha" {
		t.Fatalf("before the booking's start the lane is on %s", st.Model)
	}
	deadline := time.After(3 * time.Second)
	for l.Status().Model != "beta" {
		select {
		case <-deadline:
			t.Fatalf("the lane did not switch: %+v", l.Status())
		case <-time.After(5 * time.Millisecond):
		}
	}
	// Never before the start; how soon after it is the timer's and the machine's (the reads
	// below show no poll loop stands in for the timer).
	if late := time.Since(start); late < 0 || late > 2*time.Second {
		t.Fatalf("switched %v after the booking's start", late)
	}
	settle(t, l)
	b.open() // held replies finish at once
	if res, err := b.chat("alice", "beta"); err != nil || len(res.Choices) != 1 {
		t.Fatalf("chat on the booked model: %v", err)
	}
	reads := c.reads()
	time.Sleep(time.Until(end) + 200*time.Millisecond)
	if st := l.Status(); st.Model != "beta" || st.State != lanes.Serving {
		t.Fatalf("after the booking ended: %+v (the lane keeps the booked model)", st)
	}
	if n := c.reads() - reads; n > 2 {
		t.Fatalf("%d reads of the bookings in %v: a poll loop, not a timer", n, time.Until(end))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(audited) != 1 || audited[0] != (switchRecord{"main", "beta", "key-alice"}) {
		t.Fatalf("audited %+v, want one switch of main to beta for alice", audited)
	}
	if builds, _ := b.counts("beta"); builds != 1 {
		t.Fatalf("beta built %d times, want 1", builds)
	}
}

// TestBookingSwitchSkipsServedModelAndWholeDevice: a running booking whose model the lane
// already serves, or a whole-device booking, switches nothing; a change of the bookings
// (a booking approved while it runs) switches at once.
func TestBookingSwitchSkipsServedModelAndWholeDevice(t *testing.T) {
	b := newBench(t)
	l := b.add("main", "cuda:0", "alpha")
	c := newClock(b.booked)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var n int
	var mu sync.Mutex
	go b.mgr.FollowBookings(ctx, c, func(context.Context, string, string, lanes.Reservation) {
		mu.Lock()
		n++
		mu.Unlock()
	})
	now := time.Now()
	c.change(lanes.Reservation{Lane: "main", PersonID: "key-alice", Model: "alpha", Start: now.Add(-time.Minute), End: now.Add(time.Hour)},
		lanes.Reservation{Device: "cuda:0", Whole: true, PersonID: "key-bob", Model: "gamma", Start: now.Add(-time.Minute), End: now.Add(time.Hour)})
	time.Sleep(100 * time.Millisecond)
	if builds, _ := b.counts("alpha"); builds != 1 || l.Status().Model != "alpha" {
		t.Fatalf("the lane was switched for a model it serves: %+v", l.Status())
	}
	c.change(lanes.Reservation{Lane: "main", PersonID: "key-carol", Model: "gamma", Start: now.Add(-time.Second), End: now.Add(time.Hour)})
	// No deadline of its own (house rule: none; machines are noisy): a switch or an audit that
	// never comes ends in go test's timeout.
	for l.Status().Model != "gamma" {
		time.Sleep(5 * time.Millisecond)
	}
	// The switch is audited once Switch returns, a moment after the lane names its model.
	audited := func() int { mu.Lock(); defer mu.Unlock(); return n }
	for audited() == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // room for a second audit, which must not come
	if got := audited(); got != 1 {
		t.Fatalf("%d switches audited, want 1", got)
	}
}
