package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Booking states (see migrations/0013_bookings.sql).
const (
	BookingPending   = "pending"
	BookingApproved  = "approved"
	BookingRejected  = "rejected"
	BookingCancelled = "cancelled"
	BookingEnded     = "ended"
)

// holdingStates are the states whose booking holds its window against others.
var holdingStates = []string{BookingPending, BookingApproved}

// countedStates are the states whose booking counts against its person's hours per week.
var countedStates = []string{BookingPending, BookingApproved, BookingEnded}

// Week is the span a person's booking hours are counted over: the UTC week from Monday 00:00.
const Week = 7 * 24 * time.Hour

// Booking is one stored booking: a person holding a lane (Lane set) or a whole device (Lane
// empty) from Start to End.
type Booking struct {
	ID         string // "bk-" and hex digits
	PersonID   string
	PersonName string
	Lane       string // the lane's id; "" for a whole-device booking
	Device     string // the device held; for a lane booking the device the lane is on
	Model      string // the model to load on the lane at Start; "" for none
	Start, End time.Time
	State      string
	// DecidedBy is the person who approved or rejected the booking; DecidedAt when.
	DecidedBy string
	DecidedAt time.Time
	// CreatedAt is zero for now when inserting.
	CreatedAt time.Time
}

// WholeDevice reports whether the booking holds its whole device rather than one lane.
func (b Booking) WholeDevice() bool { return b.Lane == "" }

// Covers reports whether t lies in the booking's window [Start, End).
func (b Booking) Covers(t time.Time) bool { return !t.Before(b.Start) && t.Before(b.End) }

// BookingConflictError is InsertBooking's refusal of a window another booking holds.
type BookingConflictError struct{ With Booking }

func (e *BookingConflictError) Error() string {
	what := "lane " + e.With.Lane
	if e.With.WholeDevice() {
		what = "the whole device " + e.With.Device
	}
	return fmt.Sprintf("booking %s (%s) holds %s from %s to %s", e.With.ID, e.With.State, what,
		e.With.Start.Format(time.RFC3339), e.With.End.Format(time.RFC3339))
}

// BookingQuotaError is InsertBooking's refusal of a booking that would take its person past
// their hours for a week.
type BookingQuotaError struct {
	WeekStart, Reset    time.Time // the week over budget, and when the next one begins
	Used, Asked, Budget time.Duration
}

func (e *BookingQuotaError) Error() string {
	return fmt.Sprintf("the week from %s has %s booked already; %s more would pass the %s allowed per week (it resets at %s)",
		e.WeekStart.Format(time.DateOnly), hours(e.Used), hours(e.Asked), hours(e.Budget), e.Reset.Format(time.RFC3339))
}

func hours(d time.Duration) string { return fmt.Sprintf("%.2fh", d.Hours()) }

// ErrBookingState is returned by ChangeBooking when the booking is not in a state the change
// may start from.
var ErrBookingState = errors.New("booking is not in a state that allows this")

const bookingColumns = `id, person_id, person_name, lane, device, model, start_at, end_at, state, decided_by, decided_at, created_at`

// WeekStart is the start (Monday 00:00 UTC) of the week t lies in.
func WeekStart(t time.Time) time.Time {
	t = t.UTC()
	day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	return day.AddDate(0, 0, -((int(day.Weekday()) + 6) % 7))
}

// InsertBooking stores b after checking, in the same write transaction (so of two concurrent
// bookings of one window exactly one is stored), that no pending or approved booking holds an
// overlapping window of the same lane or device: a whole-device booking overlaps every booking
// on its device, a lane booking the whole-device bookings of its device and the bookings of
// its lane. It fails with a *BookingConflictError for an overlap, and, when weekBudget is above
// 0, with a *BookingQuotaError when the person's pending, approved and ended bookings plus b
// would pass weekBudget in any week b touches.
func (s *Store) InsertBooking(ctx context.Context, b Booking, weekBudget time.Duration) error {
	if b.ID == "" || b.PersonID == "" || !b.Start.Before(b.End) || !slices.Contains(holdingStates, b.State) {
		return fmt.Errorf("save booking: want an id, a person, start before end and state pending or approved (got %+v)", b)
	}
	if b.CreatedAt.IsZero() {
		b.CreatedAt = time.Now()
	}
	tx, err := s.w.BeginTx(ctx, nil) // _txlock=immediate: the write lock is held from here
	if err != nil {
		return fmt.Errorf("save booking: %w", err)
	}
	defer tx.Rollback()
	in := func(states []string) string { return `('` + strings.Join(states, `', '`) + `')` }
	other, err := scanBooking(tx.QueryRowContext(ctx, `SELECT `+bookingColumns+` FROM bookings
		WHERE device = ? AND state IN `+in(holdingStates)+` AND start_at < ? AND end_at > ?
		AND (? = '' OR lane = '' OR lane = ?) ORDER BY start_at LIMIT 1`,
		b.Device, formatTime(b.End), formatTime(b.Start), b.Lane, b.Lane))
	switch {
	case err == nil:
		return &BookingConflictError{With: other}
	case !errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("save booking: %w", err)
	}
	if weekBudget > 0 {
		if err := checkWeeks(ctx, tx, b, weekBudget, in(countedStates)); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO bookings (`+bookingColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		b.ID, b.PersonID, b.PersonName, b.Lane, b.Device, b.Model, formatTime(b.Start), formatTime(b.End), b.State,
		b.DecidedBy, optionalTime(b.DecidedAt), formatTime(b.CreatedAt)); err != nil {
		return fmt.Errorf("save booking: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("save booking: %w", err)
	}
	return nil
}

// checkWeeks refuses b when, in some week it touches, it and its person's counted bookings
// pass budget.
func checkWeeks(ctx context.Context, tx *sql.Tx, b Booking, budget time.Duration, counted string) error {
	first := WeekStart(b.Start)
	last := WeekStart(b.End.Add(-time.Nanosecond)).Add(Week)
	rows, err := tx.QueryContext(ctx, `SELECT `+bookingColumns+` FROM bookings
		WHERE person_id = ? AND state IN `+counted+` AND start_at < ? AND end_at > ?`,
		b.PersonID, formatTime(last), formatTime(first))
	if err != nil {
		return fmt.Errorf("save booking: count the week's hours: %w", err)
	}
	defer rows.Close()
	var mine []Booking
	for rows.Next() {
		o, err := scanBooking(rows)
		if err != nil {
			return fmt.Errorf("save booking: count the week's hours: %w", err)
		}
		mine = append(mine, o)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("save booking: count the week's hours: %w", err)
	}
	for w := first; w.Before(last); w = w.Add(Week) {
		var used time.Duration
		for _, o := range mine {
			used += overlap(o.Start, o.End, w, w.Add(Week))
		}
		asked := overlap(b.Start, b.End, w, w.Add(Week))
		if used+asked > budget {
			return &BookingQuotaError{WeekStart: w, Reset: w.Add(Week), Used: used, Asked: asked, Budget: budget}
		}
	}
	return nil
}

// overlap is the length of [a0, a1) ∩ [b0, b1).
func overlap(a0, a1, b0, b1 time.Time) time.Duration {
	start, end := a0, a1
	if b0.After(start) {
		start = b0
	}
	if b1.Before(end) {
		end = b1
	}
	return max(0, end.Sub(start))
}

// Booking returns the booking with the id, or an error wrapping ErrNotFound.
func (s *Store) Booking(ctx context.Context, id string) (Booking, error) {
	b, err := scanBooking(s.r.QueryRowContext(ctx, `SELECT `+bookingColumns+` FROM bookings WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Booking{}, fmt.Errorf("booking %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Booking{}, fmt.Errorf("booking %s: %w", id, err)
	}
	return b, nil
}

// BookingFilter picks bookings; the zero value picks every one.
type BookingFilter struct {
	PersonID string   // only this person's
	States   []string // only these states
	// EndAfter and StartBefore, when set, keep the bookings with End > EndAfter and
	// Start <= StartBefore.
	EndAfter, StartBefore time.Time
}

// Bookings lists the bookings f picks, by start time.
func (s *Store) Bookings(ctx context.Context, f BookingFilter) ([]Booking, error) {
	var where []string
	var args []any
	if f.PersonID != "" {
		where, args = append(where, `person_id = ?`), append(args, f.PersonID)
	}
	if len(f.States) > 0 {
		where = append(where, `state IN (?`+strings.Repeat(`, ?`, len(f.States)-1)+`)`)
		for _, st := range f.States {
			args = append(args, st)
		}
	}
	if !f.EndAfter.IsZero() {
		where, args = append(where, `end_at > ?`), append(args, formatTime(f.EndAfter))
	}
	if !f.StartBefore.IsZero() {
		where, args = append(where, `start_at <= ?`), append(args, formatTime(f.StartBefore))
	}
	q := `SELECT ` + bookingColumns + ` FROM bookings`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, ` AND `)
	}
	return queryRows(ctx, s, "list bookings", scanBooking, q+` ORDER BY start_at, id`, args...)
}

// BookingChange moves a booking from one of From to To.
type BookingChange struct {
	From []string
	To   string
	// DecidedBy and DecidedAt, when set, record who approved or rejected it.
	DecidedBy string
	DecidedAt time.Time
	// End, when set, cuts the booking short (a running booking cancelled).
	End time.Time
}

// ChangeBooking applies ch to the booking with the id and returns the booking as changed. It
// fails with an error wrapping ErrNotFound, or ErrBookingState (with the booking as it is) when
// the booking's state is not one of ch.From.
func (s *Store) ChangeBooking(ctx context.Context, id string, ch BookingChange) (Booking, error) {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return Booking{}, fmt.Errorf("change booking %s: %w", id, err)
	}
	defer tx.Rollback()
	b, err := scanBooking(tx.QueryRowContext(ctx, `SELECT `+bookingColumns+` FROM bookings WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Booking{}, fmt.Errorf("booking %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Booking{}, fmt.Errorf("change booking %s: %w", id, err)
	}
	if !slices.Contains(ch.From, b.State) {
		return b, fmt.Errorf("booking %s is %s: %w", id, b.State, ErrBookingState)
	}
	b.State = ch.To
	if ch.DecidedBy != "" {
		b.DecidedBy, b.DecidedAt = ch.DecidedBy, ch.DecidedAt.UTC()
	}
	if !ch.End.IsZero() && ch.End.Before(b.End) {
		b.End = ch.End.UTC()
		if !b.Start.Before(b.End) {
			b.End = b.Start.Add(time.Nanosecond) // the schema wants start < end
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE bookings SET state = ?, decided_by = ?, decided_at = ?, end_at = ? WHERE id = ?`,
		b.State, b.DecidedBy, optionalTime(b.DecidedAt), formatTime(b.End), id); err != nil {
		return Booking{}, fmt.Errorf("change booking %s: %w", id, err)
	}
	if err := tx.Commit(); err != nil {
		return Booking{}, fmt.Errorf("change booking %s: %w", id, err)
	}
	return b, nil
}

// EndBookings marks every approved booking whose window closed by now as ended, and returns
// them.
func (s *Store) EndBookings(ctx context.Context, now time.Time) ([]Booking, error) {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("end bookings: %w", err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, `SELECT `+bookingColumns+` FROM bookings WHERE state = ? AND end_at <= ?`,
		BookingApproved, formatTime(now))
	if err != nil {
		return nil, fmt.Errorf("end bookings: %w", err)
	}
	var ended []Booking
	for rows.Next() {
		b, err := scanBooking(rows)
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("end bookings: %w", err)
		}
		b.State = BookingEnded
		ended = append(ended, b)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("end bookings: %w", err)
	}
	if len(ended) == 0 {
		return nil, nil
	}
	if _, err := tx.ExecContext(ctx, `UPDATE bookings SET state = ? WHERE state = ? AND end_at <= ?`,
		BookingEnded, BookingApproved, formatTime(now)); err != nil {
		return nil, fmt.Errorf("end bookings: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("end bookings: %w", err)
	}
	return ended, nil
}

func scanBooking(row interface{ Scan(...any) error }) (Booking, error) {
	var b Booking
	var start, end, decided, created string
	if err := row.Scan(&b.ID, &b.PersonID, &b.PersonName, &b.Lane, &b.Device, &b.Model, &start, &end, &b.State,
		&b.DecidedBy, &decided, &created); err != nil {
		return Booking{}, err
	}
	var err error
	if b.Start, err = parseTime(start); err != nil {
		return Booking{}, fmt.Errorf("booking %s: start %q: %w", b.ID, start, err)
	}
	if b.End, err = parseTime(end); err != nil {
		return Booking{}, fmt.Errorf("booking %s: end %q: %w", b.ID, end, err)
	}
	if decided != "" {
		if b.DecidedAt, err = parseTime(decided); err != nil {
			return Booking{}, fmt.Errorf("booking %s: decided_at %q: %w", b.ID, decided, err)
		}
	}
	if b.CreatedAt, err = parseTime(created); err != nil {
		return Booking{}, fmt.Errorf("booking %s: created_at %q: %w", b.ID, created, err)
	}
	return b, nil
}
