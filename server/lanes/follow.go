package lanes

import (
	"context"
	"log/slog"
	"time"
)

// BookingClock is the bookings as the lanes follow them (app adapts bookings.Service): what
// runs now, when that next changes, and a signal at every change.
type BookingClock interface {
	Reservations
	// Next is the first instant after now at which a booking starts or ends; ok is false when
	// none is ahead.
	Next(ctx context.Context, now time.Time) (at time.Time, ok bool, err error)
	// Changed is closed at the next change of the bookings (one made, approved, cancelled...).
	Changed() <-chan struct{}
}

// SwitchAudit records a switch a booking made: lane (by name) now loads model for booking.
type SwitchAudit func(ctx context.Context, lane, model string, booking Reservation)

// followRecheck bounds the wait for the next transition, should a change be missed (the
// bookings written by another process, which Changed does not see).
const followRecheck = time.Minute

// FollowBookings switches a lane to the model its booking names when the booking starts (with
// the drain Switch does), each booking once, until ctx ends. It sleeps on one timer armed for
// the bookings' next transition, re-armed whenever they change; no poll loop. When a booking
// ends its lane keeps that model: the spec has a booking load a model ("Book a slot to load
// it"), never unload one, and switching back would drain the next person's requests for
// nothing. audit (nil: none) records every switch made.
func (m *Manager) FollowBookings(ctx context.Context, clock BookingClock, audit SwitchAudit) {
	applied := map[followKey]bool{}
	timer := time.NewTimer(followRecheck)
	defer timer.Stop()
	for {
		changed := clock.Changed() // before reading, so a change during the read is not missed
		now := time.Now()
		m.applyBookings(ctx, clock.Active(now), applied, audit)
		wait := followRecheck
		if at, ok, err := clock.Next(ctx, now); err != nil {
			slog.Error("lanes: read the next booking", "err", err)
		} else if ok && at.Sub(now) < wait {
			wait = max(at.Sub(now), 0)
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-timer.C:
		}
	}
}

// followKey names one booking's switch: its lane, start and model.
type followKey struct {
	lane, model string
	start       time.Time
}

// applyBookings switches the lanes whose running booking names a model not yet switched to;
// applied remembers the bookings done and forgets those no longer running.
func (m *Manager) applyBookings(ctx context.Context, active []Reservation, applied map[followKey]bool, audit SwitchAudit) {
	running := map[followKey]bool{}
	for _, r := range active {
		if r.Whole || r.Model == "" {
			continue
		}
		k := followKey{lane: r.Lane, model: r.Model, start: r.Start}
		running[k] = true
		if applied[k] {
			continue
		}
		applied[k] = true
		if m.serving(r.Lane, r.Model) {
			continue
		}
		if _, err := m.switchModel(ctx, r.Lane, r.Model, false); err != nil { // audited below, as the booking's
			slog.Error("lanes: a booking's model switch failed", "lane", r.Lane, "model", r.Model, "err", err)
			continue
		}
		slog.Info("lanes: a booking switched its lane", "lane", r.Lane, "model", r.Model, "person", r.PersonID)
		if audit != nil { // a switch made is recorded even when shutdown begins meanwhile
			audit(context.WithoutCancel(ctx), r.Lane, r.Model, r)
		}
	}
	for k := range applied {
		if !running[k] {
			delete(applied, k)
		}
	}
}

// serving reports whether the lane named name already serves (or loads) model, as Switch
// would name it.
func (m *Manager) serving(name, model string) bool {
	for _, l := range m.Lanes() {
		if l.Name() != name {
			continue
		}
		l.mu.Lock()
		kind, cur := Kind(l.row.Engine), l.row.Model
		l.mu.Unlock()
		want, err := m.checkModel(kind, model)
		return err == nil && want == cur
	}
	return false
}
