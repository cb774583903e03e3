package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/bookings"
	"github.com/superfluid/superfluid/server/lanes"
	"github.com/superfluid/superfluid/server/people"
	"github.com/superfluid/superfluid/server/store"
)

// newBookings is team mode's bookings over the data directory's lanes (a lane is booked by
// name or id and the booking keeps its id and device), audited in the people's audit log. A
// booking's model must be one its lane can load (lanes.CheckModel: a local lane's, one of
// catalog's).
func newBookings(st *store.Store, policy bookings.Policy, audit bookings.AuditFunc, catalog lanes.Catalog) (*bookings.Service, error) {
	checkModel := func(ctx context.Context, laneID, model string) (string, error) {
		l, err := st.Lane(ctx, laneID)
		if err != nil {
			return "", err
		}
		return lanes.CheckModel(catalog, lanes.Kind(l.Engine), model)
	}
	return bookings.New(bookings.Config{Store: st, Policy: policy, Audit: audit, CheckModel: checkModel, ResolveLane: func(ctx context.Context, nameOrID string) (bookings.LaneRef, error) {
		l, err := st.Lane(ctx, nameOrID)
		if errors.Is(err, store.ErrNotFound) {
			return bookings.LaneRef{}, &llm.StatusError{Status: http.StatusNotFound, Code: "lane_not_found",
				Message: fmt.Sprintf("no lane %s (superfluid lanes list shows them)", nameOrID)}
		}
		if err != nil {
			return bookings.LaneRef{}, err
		}
		return bookings.LaneRef{ID: l.ID, Device: l.Device}, nil
	}})
}

// endBookingsOnDisable makes disabling a person in p end their bookings in svc (a running one
// now, the ones ahead cancelled; audited), so a disabled person's bookings hold no lane: the
// other people stop getting gpu_reserved and the lane is free at once.
func endBookingsOnDisable(p *people.Service, svc *bookings.Service) {
	if p == nil || svc == nil {
		return
	}
	p.OnDisable(func(ctx context.Context, who people.Person) {
		if ended, err := svc.EndPerson(ctx, who.ID); err != nil {
			slog.Error("end a disabled person's bookings", "person", who.Name, "ended", len(ended), "err", err)
		}
	})
}

// auditBookings records the bookings' steps in the audit log of p (nil: none), by the request's
// person and key, by the command line when cli is set, or as made where ctx says (the desktop
// app's people.WithVia); a booking ending on time by nobody.
func auditBookings(p *people.Service, cli bool) bookings.AuditFunc {
	if p == nil {
		return nil
	}
	return func(ctx context.Context, action, target string, detail any) error {
		id, _ := auth.FromContext(ctx)
		by := people.ActorOf(id)
		switch {
		case action == bookings.ActionEnd: // on time, by the clock: not by whoever's request noticed
			by = people.Actor{Via: "serve"}
		case cli:
			by = people.CLI
		case people.ViaFrom(ctx) != "": // the desktop app, as this machine's admin
			by.Via = people.ViaFrom(ctx)
		}
		var fields map[string]any
		if b, ok := detail.(bookings.Booking); ok {
			fields = map[string]any{"person": b.PersonName, "lane": b.Lane, "device": b.Device, "model": b.Model,
				"start": b.Start.Format(time.RFC3339), "end": b.End.Format(time.RFC3339), "state": b.State}
		}
		return p.Record(ctx, by, action, target, fields)
	}
}

// bookedLanes is the bookings as the lanes' router reads them (lanes.Reservations). The router
// asks on every request, so the answer is kept until the next booking starts or ends or the
// bookings change (bookings.Service.Changed), whichever comes first.
type bookedLanes struct {
	svc *bookings.Service
	st  *store.Store

	mu         sync.Mutex
	cached     []lanes.Reservation
	from, till time.Time       // the cached answer holds for now in [from, till)
	changed    <-chan struct{} // closed when the bookings change
}

var _ lanes.Reservations = (*bookedLanes)(nil)

// Active are the approved bookings running at now, lanes by name.
func (b *bookedLanes) Active(now time.Time) []lanes.Reservation {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.changed != nil && !now.Before(b.from) && now.Before(b.till) {
		select {
		case <-b.changed:
		default:
			return b.cached
		}
	}
	ctx := context.Background()
	changed := b.svc.Changed() // before reading, so a change during the read is not missed
	active, err := b.svc.Active(ctx, now)
	if err != nil {
		slog.Error("read the bookings running now", "err", err)
		return nil // uncached: the next request tries again
	}
	out := make([]lanes.Reservation, 0, len(active))
	for _, bk := range active {
		r := lanes.Reservation{Lane: bk.Lane, Device: bk.Device, PersonID: bk.PersonID, Whole: bk.WholeDevice(),
			Model: bk.Model, Start: bk.Start, End: bk.End}
		if !r.Whole {
			if l, err := b.st.Lane(ctx, bk.Lane); err == nil {
				r.Lane = l.Name
			}
		}
		out = append(out, r)
	}
	till := now.Add(time.Minute) // a bound, should a change be missed (another process)
	if next, ok, err := b.svc.Next(ctx, now); err == nil && ok && next.At.Before(till) {
		till = next.At
	}
	b.cached, b.from, b.till, b.changed = out, now, till, changed
	return out
}
