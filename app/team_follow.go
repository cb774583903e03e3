package app

import (
	"context"
	"log/slog"
	"time"

	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/lanes"
	"github.com/superfluid/superfluid/server/people"
)

// ActionLaneSwitch is the audit log's action for a lane a booking switched to its model.
const ActionLaneSwitch = "lane.switch"

// bookedLanes is the bookings as the lanes follow them too (lanes.BookingClock): a lane
// switches to its booking's model at the booking's start (lanes.Manager.FollowBookings).
var _ lanes.BookingClock = (*bookedLanes)(nil)

// Next is the first start or end of an approved booking after now.
func (b *bookedLanes) Next(ctx context.Context, now time.Time) (time.Time, bool, error) {
	t, ok, err := b.svc.Next(ctx, now)
	return t.At, ok, err
}

// Changed is closed at the next change of the bookings.
func (b *bookedLanes) Changed() <-chan struct{} { return b.svc.Changed() }

// followBookings starts the lanes following clock's bookings until the team closes, each
// switch audited in p's log (nil: none) as made by the server for the booking's person.
func (t *team) followBookings(clock lanes.BookingClock, p *people.Service) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.stopFollowing = func() { cancel(); <-done }
	go func() {
		defer close(done)
		t.lanes.FollowBookings(ctx, clock, auditSwitch(p))
	}()
}

// auditLanes records the lanes' writes (create, switch, remove) in p's audit log (nil: none),
// by the request's person and key, by the command line when cli is set, or by where ctx's
// mark says (people.WithVia: the desktop app, as this machine's admin).
func auditLanes(p *people.Service, cli bool) lanes.AuditFunc {
	if p == nil {
		return nil
	}
	return func(ctx context.Context, action, lane string, detail map[string]any) error {
		id, _ := auth.FromContext(ctx)
		by := people.ActorOf(id)
		switch {
		case cli:
			by = people.CLI
		case people.ViaFrom(ctx) != "":
			by.Via = people.ViaFrom(ctx)
		}
		return p.Record(ctx, by, action, lane, detail)
	}
}

// auditSwitch records a booking's lane switch in p's audit log.
func auditSwitch(p *people.Service) lanes.SwitchAudit {
	if p == nil {
		return nil
	}
	return func(ctx context.Context, lane, model string, r lanes.Reservation) {
		name := r.PersonID // a key of nobody's booking: its key id
		if who, err := p.Get(ctx, r.PersonID); err == nil {
			name = who.Name
		}
		detail := map[string]any{"model": model, "person": name, "person_id": r.PersonID, "reason": "booking",
			"start": r.Start.UTC().Format(time.RFC3339), "end": r.End.UTC().Format(time.RFC3339)}
		if err := p.Record(ctx, people.Actor{Via: "serve"}, ActionLaneSwitch, lane, detail); err != nil {
			slog.Error("audit a booking's lane switch", "lane", lane, "err", err)
		}
	}
}
