// Package bookings is team mode's reservations: a person books a lane (optionally with a model
// to load at the start) or a whole device for a window of time. It checks each booking against
// the policy (Policy: approval, longest booking, hours per week) and the bookings already held,
// keeps them in SQLite through server/store (the overlap and the hours are checked in the
// insert's own write transaction, so of two concurrent bookings of a window exactly one wins),
// moves them through pending → approved | rejected, cancelled and ended, and audits each of
// those steps through Config.Audit.
//
// It is ticker-free: Active says which approved bookings cover an instant, Next when the next
// one starts or ends, and Changed signals every change, so whoever switches lanes (the lanes
// engine) arms one timer for Next and re-reads on Changed. Bookings end on time by their window
// alone; Next and List record the ended ones as ended.
//
// Refusals are llm.StatusError (409 booking_conflict, 403 admin_required, 429 quota_exceeded,
// 404 booking_not_found, 409 invalid_booking_state) or wrap llm.ErrInvalidInput (a bad window,
// 400), so every dialect renders them. It knows nothing of HTTP.
package bookings

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/store"
)

// Booking is one booking as stored.
type Booking = store.Booking

// States a booking goes through.
const (
	Pending   = store.BookingPending
	Approved  = store.BookingApproved
	Rejected  = store.BookingRejected
	Cancelled = store.BookingCancelled
	Ended     = store.BookingEnded
)

// Audited actions (the Audit hook's action; its target is the booking's id and its detail the
// Booking after the step).
const (
	ActionBook    = "booking.create"
	ActionApprove = "booking.approve"
	ActionReject  = "booking.reject"
	ActionCancel  = "booking.cancel"
	ActionEnd     = "booking.end"
)

// Policy is what bookings are allowed; the zero value needs no approval and has no limits.
type Policy struct {
	// NeedsApproval makes members' bookings wait as pending until an admin approves or rejects
	// them; an admin's own bookings are approved at once.
	NeedsApproval bool
	// MaxLength is the longest booking; 0 is no limit.
	MaxLength time.Duration
	// MaxHoursPerWeek is the hours a person may have booked per UTC week (from Monday 00:00),
	// pending, approved and ended bookings together; 0 is no limit.
	MaxHoursPerWeek float64
}

// AuditFunc records one step: who is in ctx, action one of the Action constants, target the
// booking's id, detail the Booking.
type AuditFunc func(ctx context.Context, action, target string, detail any) error

// Config builds a Service.
type Config struct {
	Store  *store.Store
	Policy Policy
	// Audit records every booking, approval, rejection, cancellation and end; nil records
	// nothing.
	Audit AuditFunc
	// ResolveLane finds a lane by name or id: its id (what a booking stores) and the device it
	// is on; it fails for a lane that does not exist (its error is returned as it is). nil takes
	// the lane as given and the device given with the booking ("" when none).
	ResolveLane func(ctx context.Context, nameOrID string) (LaneRef, error)
	// CheckModel says whether the lane with id laneID can load model (a registered model, for a
	// lane of the built-in worker): the name the booking keeps (the catalog's id), or why not.
	// nil takes any name.
	CheckModel func(ctx context.Context, laneID, model string) (string, error)
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// LaneRef is a lane as a booking names it: its id and its device.
type LaneRef struct{ ID, Device string }

// LastTime is the latest a booking may end: the store keeps times as text that sorts as time
// only with four-digit years (a year-10000 booking would slip past every overlap check and
// break every list that reads it).
var LastTime = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)

// PastGrace is how far in the past a booking may start (a "now" typed a moment ago).
const PastGrace = time.Minute

// Service books, decides and lists bookings. It is safe for concurrent use.
type Service struct {
	st          *store.Store
	audit       AuditFunc
	resolveLane func(context.Context, string) (LaneRef, error)
	checkModel  func(ctx context.Context, laneID, model string) (string, error)
	now         func() time.Time

	mu      sync.Mutex
	policy  Policy
	changed chan struct{}
}

// New returns a Service over cfg.Store.
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil {
		return nil, errors.New("bookings: no store")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Service{st: cfg.Store, audit: cfg.Audit, resolveLane: cfg.ResolveLane, checkModel: cfg.CheckModel, now: cfg.Now, policy: cfg.Policy,
		changed: make(chan struct{})}, nil
}

// Policy is the policy in force.
func (s *Service) Policy() Policy {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.policy
}

// SetPolicy replaces the policy for the bookings made from now on.
func (s *Service) SetPolicy(p Policy) {
	s.mu.Lock()
	s.policy = p
	s.mu.Unlock()
}

// Changed returns a channel closed at the next change of the bookings (a booking made,
// approved, rejected, cancelled or ended); call it again for the change after that.
func (s *Service) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

func (s *Service) notify() {
	s.mu.Lock()
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
}

// record audits one step. The step is already stored, so a failing audit cannot undo it: it is
// logged rather than turned into a refusal of what did happen.
func (s *Service) record(ctx context.Context, action string, b Booking) {
	if s.audit == nil {
		return
	}
	if err := s.audit(ctx, action, b.ID, b); err != nil {
		slog.Error("audit a booking", "action", action, "booking", b.ID, "err", err)
	}
}

// NewBooking is what Book is asked for: a lane (Lane, and optionally Model) or a whole device
// (Device alone), from Start to End.
type NewBooking struct {
	Lane, Device, Model string
	Start, End          time.Time
}

// Book books nb for the person in ctx. It refuses (400) a booking naming neither a lane nor a
// device, a model on a whole-device booking, a model the lane cannot load (Config.CheckModel), end ≤ start, a window in the past or ending after
// LastTime, one longer than the policy's MaxLength; (409 booking_conflict) one overlapping a pending or approved
// booking of the same lane or device; (429 quota_exceeded, Retry-After the week's reset) one
// past the person's hours per week.
func (s *Service) Book(ctx context.Context, nb NewBooking) (Booking, error) {
	p := PersonFrom(ctx)
	policy, now := s.Policy(), s.now()
	if err := s.checkWindow(nb, policy, now); err != nil {
		return Booking{}, err
	}
	lane, device := nb.Lane, nb.Device
	if lane != "" && s.resolveLane != nil {
		ref, err := s.resolveLane(ctx, lane)
		if err != nil {
			return Booking{}, err
		}
		if device != "" && device != ref.Device {
			return Booking{}, fmt.Errorf("%w: lane %s is on device %s, not %s", llm.ErrInvalidInput, nb.Lane, ref.Device, device)
		}
		lane, device = ref.ID, ref.Device
	}
	model := nb.Model
	if model != "" && s.checkModel != nil {
		m, err := s.checkModel(ctx, lane, model)
		if err != nil {
			return Booking{}, fmt.Errorf("%w: lane %s cannot load the model %q: %v", llm.ErrInvalidInput, nb.Lane, model, err)
		}
		model = m
	}
	b := Booking{ID: newID(), PersonID: p.ID, PersonName: p.Name, Lane: lane, Device: device, Model: model,
		Start: nb.Start.UTC(), End: nb.End.UTC(), State: Approved, CreatedAt: now}
	if policy.NeedsApproval && !p.Admin {
		b.State = Pending
	}
	budget := time.Duration(policy.MaxHoursPerWeek * float64(time.Hour))
	if err := s.st.InsertBooking(ctx, b, budget); err != nil {
		return Booking{}, s.refusal(err, now)
	}
	s.record(ctx, ActionBook, b)
	s.notify()
	return b, nil
}

// checkWindow refuses what no state of the store could make right.
func (s *Service) checkWindow(nb NewBooking, policy Policy, now time.Time) error {
	switch {
	case nb.Lane == "" && nb.Device == "":
		return fmt.Errorf("%w: name a lane, or a device to book whole", llm.ErrInvalidInput)
	case nb.Lane == "" && nb.Model != "":
		return fmt.Errorf("%w: a whole-device booking serves no model (it is for your own job); book a lane to load %s", llm.ErrInvalidInput, nb.Model)
	case nb.Start.IsZero() || nb.End.IsZero():
		return fmt.Errorf("%w: give the booking's start and end", llm.ErrInvalidInput)
	case !nb.End.After(nb.Start):
		return fmt.Errorf("%w: the booking ends (%s) at or before it starts (%s)", llm.ErrInvalidInput,
			nb.End.UTC().Format(time.RFC3339), nb.Start.UTC().Format(time.RFC3339))
	case !nb.End.After(now) || nb.Start.Before(now.Add(-PastGrace)):
		return fmt.Errorf("%w: the booking starts in the past (%s; it is now %s)", llm.ErrInvalidInput,
			nb.Start.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	case nb.End.After(LastTime):
		return fmt.Errorf("%w: the booking ends after %s, the last time a booking can name", llm.ErrInvalidInput, LastTime.Format(time.RFC3339))
	case policy.MaxLength > 0 && nb.End.Sub(nb.Start) > policy.MaxLength:
		return fmt.Errorf("%w: the booking is %s long; the policy allows at most %s", llm.ErrInvalidInput,
			nb.End.Sub(nb.Start).Round(time.Second), policy.MaxLength)
	}
	return nil
}

// refusal maps the store's errors to the refusals clients see.
func (s *Service) refusal(err error, now time.Time) error {
	var ce *store.BookingConflictError
	var qe *store.BookingQuotaError
	switch {
	case errors.As(err, &ce):
		return &llm.StatusError{Status: http.StatusConflict, Code: "booking_conflict",
			Message: "the window is taken: " + ce.Error()}
	case errors.As(err, &qe):
		return &llm.StatusError{Status: http.StatusTooManyRequests, Code: "quota_exceeded",
			Message: "booking hours used up: " + qe.Error(), RetryAfter: qe.Reset.Sub(now)}
	case errors.Is(err, store.ErrNotFound):
		return &llm.StatusError{Status: http.StatusNotFound, Code: "booking_not_found", Message: err.Error()}
	case errors.Is(err, store.ErrBookingState):
		return &llm.StatusError{Status: http.StatusConflict, Code: "invalid_booking_state", Message: err.Error()}
	}
	return err
}

func newID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "bk-" + hex.EncodeToString(b)
}
