package bookings

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/store"
)

// Approve approves a pending booking. Only an admin may (403 admin_required, worded for a
// person approving their own booking); a booking that is not pending, or whose window has
// passed, is 409 invalid_booking_state; an unknown one 404 booking_not_found.
func (s *Service) Approve(ctx context.Context, id string) (Booking, error) {
	return s.decide(ctx, id, Approved, ActionApprove)
}

// Reject rejects a pending booking, freeing its window; the same rules as Approve.
func (s *Service) Reject(ctx context.Context, id string) (Booking, error) {
	return s.decide(ctx, id, Rejected, ActionReject)
}

func (s *Service) decide(ctx context.Context, id, to, action string) (Booking, error) {
	p, now := PersonFrom(ctx), s.now()
	b, err := s.st.Booking(ctx, id)
	if err != nil {
		return Booking{}, s.refusal(err, now)
	}
	verb := map[string]string{Approved: "approve", Rejected: "reject"}[to]
	if !p.Admin {
		if b.PersonID == p.ID {
			return Booking{}, adminRequired(fmt.Sprintf("you cannot %s your own booking %s: an admin decides it", verb, id))
		}
		return Booking{}, adminRequired(fmt.Sprintf("only an admin may %s bookings", verb))
	}
	if to == Approved && !b.End.After(now) {
		return Booking{}, s.refusal(fmt.Errorf("booking %s ended at %s, before it was approved: %w", id,
			b.End.Format(time.RFC3339), store.ErrBookingState), now)
	}
	b, err = s.st.ChangeBooking(ctx, id, store.BookingChange{From: []string{Pending}, To: to, DecidedBy: p.Name, DecidedAt: now})
	if err != nil {
		return Booking{}, s.refusal(err, now)
	}
	s.record(ctx, action, b)
	s.notify()
	return b, nil
}

func adminRequired(msg string) error {
	return &llm.StatusError{Status: http.StatusForbidden, Code: "admin_required", Message: msg}
}

// Cancel cancels a pending or approved booking: its own person's, or anyone's for an admin (a
// member asking for another's booking is told it does not exist, 404). A booking that has not
// started becomes cancelled; one running ends now (ended, its end cut to now), so the hours it
// was used still count.
func (s *Service) Cancel(ctx context.Context, id string) (Booking, error) {
	p, now := PersonFrom(ctx), s.now()
	b, err := s.st.Booking(ctx, id)
	if err != nil {
		return Booking{}, s.refusal(err, now)
	}
	if !p.Admin && b.PersonID != p.ID {
		return Booking{}, s.refusal(fmt.Errorf("booking %s: %w", id, store.ErrNotFound), now)
	}
	ch := store.BookingChange{From: []string{Pending, Approved}, To: Cancelled}
	if b.State == Approved && !b.Start.After(now) {
		ch = store.BookingChange{From: []string{Approved}, To: Ended, End: now}
	}
	b, err = s.st.ChangeBooking(ctx, id, ch)
	if err != nil {
		return Booking{}, s.refusal(err, now)
	}
	s.record(ctx, ActionCancel, b)
	s.notify()
	return b, nil
}

// ListQuery picks the bookings List returns; the zero value is the asker's own, every state.
type ListQuery struct {
	// All lists everyone's bookings (admins only: 403 admin_required otherwise).
	All bool
	// States keeps only these states.
	States []string
	// Current keeps only the bookings that have not ended (End after now).
	Current bool
}

// List returns the bookings q picks, by start. It first records the bookings whose window has
// closed as ended.
func (s *Service) List(ctx context.Context, q ListQuery) ([]Booking, error) {
	p, now := PersonFrom(ctx), s.now()
	if q.All && !p.Admin {
		return nil, adminRequired("only an admin may list everyone's bookings")
	}
	for _, st := range q.States {
		if !slices.Contains([]string{Pending, Approved, Rejected, Cancelled, Ended}, st) {
			return nil, fmt.Errorf("%w: unknown booking state %q; use pending, approved, rejected, cancelled or ended", llm.ErrInvalidInput, st)
		}
	}
	if err := s.endDue(ctx, now); err != nil {
		return nil, err
	}
	f := store.BookingFilter{States: q.States}
	if !q.All {
		f.PersonID = p.ID
	}
	if q.Current {
		f.EndAfter = now
	}
	return s.st.Bookings(ctx, f)
}

// Active returns the approved bookings covering now, by start: at most one per lane, and a
// whole-device booking alone on its device.
func (s *Service) Active(ctx context.Context, now time.Time) ([]Booking, error) {
	return s.st.Bookings(ctx, store.BookingFilter{States: []string{Approved}, EndAfter: now, StartBefore: now})
}

// Transition is the next instant the active bookings change: Booking starts (Starts) or ends
// at At.
type Transition struct {
	At      time.Time
	Booking Booking
	Starts  bool
}

// Next returns the first start or end of an approved booking after now; ok is false when no
// approved booking is ahead. Arm one timer for At (and re-read on Changed). It first records
// the bookings whose window has closed as ended.
func (s *Service) Next(ctx context.Context, now time.Time) (t Transition, ok bool, err error) {
	if err := s.endDue(ctx, now); err != nil {
		return Transition{}, false, err
	}
	ahead, err := s.st.Bookings(ctx, store.BookingFilter{States: []string{Approved}, EndAfter: now})
	if err != nil {
		return Transition{}, false, err
	}
	for _, b := range ahead {
		next := Transition{At: b.End, Booking: b}
		if b.Start.After(now) {
			next = Transition{At: b.Start, Booking: b, Starts: true}
		}
		if !ok || next.At.Before(t.At) {
			t, ok = next, true
		}
	}
	return t, ok, nil
}

// endDue records the approved bookings whose window closed by now as ended, auditing each.
func (s *Service) endDue(ctx context.Context, now time.Time) error {
	ended, err := s.st.EndBookings(ctx, now)
	if err != nil {
		return err
	}
	for _, b := range ended {
		s.record(ctx, ActionEnd, b)
	}
	if len(ended) > 0 {
		s.notify()
	}
	return nil
}

// EndPerson ends the bookings of the person with id personID (one disabled: their bookings
// must not keep holding lanes): a running one ends now, one ahead (pending or approved) is
// cancelled, each audited as a cancellation by whoever is in ctx. It returns the bookings it
// changed; one that changed meanwhile (ended on time, cancelled) is skipped.
func (s *Service) EndPerson(ctx context.Context, personID string) ([]Booking, error) {
	now := s.now()
	held, err := s.st.Bookings(ctx, store.BookingFilter{PersonID: personID, States: []string{Pending, Approved}, EndAfter: now})
	if err != nil {
		return nil, err
	}
	var out []Booking
	for _, b := range held {
		ch := store.BookingChange{From: []string{Pending, Approved}, To: Cancelled}
		if b.State == Approved && !b.Start.After(now) {
			ch = store.BookingChange{From: []string{Approved}, To: Ended, End: now}
		}
		changed, err := s.st.ChangeBooking(ctx, b.ID, ch)
		if errors.Is(err, store.ErrBookingState) || errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return out, err
		}
		s.record(ctx, ActionCancel, changed)
		out = append(out, changed)
	}
	if len(out) > 0 {
		s.notify()
	}
	return out, nil
}
