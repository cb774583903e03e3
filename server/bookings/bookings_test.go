package bookings

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/store"
)

// auditLog records the Audit hook's calls.
type auditLog struct {
	mu    sync.Mutex
	steps []string // "action target by"
}

func (l *auditLog) record(ctx context.Context, action, target string, detail any) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := detail.(Booking); !ok {
		return errors.New("detail is not a booking")
	}
	l.steps = append(l.steps, action+" "+target+" "+PersonFrom(ctx).Name)
	return nil
}

func (l *auditLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.steps...)
}

var t0 = time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC) // a Monday

type fixture struct {
	svc   *Service
	audit *auditLog
	now   time.Time
	mu    sync.Mutex
}

func (f *fixture) clock() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fixture) set(t time.Time) {
	f.mu.Lock()
	f.now = t
	f.mu.Unlock()
}

func newFixture(t *testing.T, p Policy) *fixture {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "superfluid.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f := &fixture{audit: &auditLog{}, now: t0}
	lanes := map[string]string{"a": "gpu0", "b": "gpu0", "c": "gpu1"}
	ids := map[string]string{"lane-a": "a"} // a lane named by its id
	f.svc, err = New(Config{Store: st, Policy: p, Audit: f.audit.record, Now: f.clock,
		ResolveLane: func(_ context.Context, lane string) (LaneRef, error) {
			if name, ok := ids[lane]; ok {
				lane = name
			}
			if d, ok := lanes[lane]; ok {
				return LaneRef{ID: "lane-" + lane, Device: d}, nil
			}
			return LaneRef{}, &llm.StatusError{Status: http.StatusNotFound, Code: "lane_not_found", Message: "no lane " + lane}
		}})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func as(name string, admin bool) context.Context {
	return auth.NewContext(context.Background(), &auth.Identity{ID: "key-" + name, Name: name, Admin: admin})
}

func statusOf(err error) (int, string) {
	var se *llm.StatusError
	if errors.As(err, &se) {
		return se.Status, se.Code
	}
	if errors.Is(err, llm.ErrInvalidInput) {
		return http.StatusBadRequest, ""
	}
	return 0, ""
}

func TestBookRefusals(t *testing.T) {
	f := newFixture(t, Policy{MaxLength: 4 * time.Hour, MaxHoursPerWeek: 5})
	alice := as("alice", false)
	h := time.Hour
	if _, err := f.svc.Book(alice, NewBooking{Lane: "a", Model: "qwen3", Start: t0, End: t0.Add(2 * h)}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		nb     NewBooking
		status int
		code   string
	}{
		{"no target", NewBooking{Start: t0.Add(5 * h), End: t0.Add(6 * h)}, 400, ""},
		{"model on a whole device", NewBooking{Device: "gpu1", Model: "m", Start: t0.Add(5 * h), End: t0.Add(6 * h)}, 400, ""},
		{"end before start", NewBooking{Lane: "b", Start: t0.Add(6 * h), End: t0.Add(5 * h)}, 400, ""},
		{"end at start", NewBooking{Lane: "b", Start: t0.Add(6 * h), End: t0.Add(6 * h)}, 400, ""},
		{"in the past", NewBooking{Lane: "b", Start: t0.Add(-3 * h), End: t0.Add(-2 * h)}, 400, ""},
		{"starts in the past", NewBooking{Lane: "b", Start: t0.Add(-2 * time.Minute), End: t0.Add(h)}, 400, ""},
		{"too long", NewBooking{Lane: "b", Start: t0.Add(h), End: t0.Add(5*h + time.Second)}, 400, ""},
		{"unknown lane", NewBooking{Lane: "zz", Start: t0.Add(h), End: t0.Add(2 * h)}, 404, "lane_not_found"},
		{"wrong device for the lane", NewBooking{Lane: "a", Device: "gpu1", Start: t0.Add(3 * h), End: t0.Add(4 * h)}, 400, ""},
		{"same lane by id, overlapping", NewBooking{Lane: "lane-a", Start: t0.Add(h), End: t0.Add(90 * time.Minute)}, 409, "booking_conflict"},
		{"same lane overlapping", NewBooking{Lane: "a", Start: t0.Add(h), End: t0.Add(3 * h)}, 409, "booking_conflict"},
		{"whole device over the lane", NewBooking{Device: "gpu0", Start: t0.Add(h), End: t0.Add(3 * h)}, 409, "booking_conflict"},
		{"past the weekly hours", NewBooking{Lane: "b", Start: t0.Add(3 * h), End: t0.Add(7 * h)}, 429, "quota_exceeded"},
	} {
		_, err := f.svc.Book(alice, tt.nb)
		if status, code := statusOf(err); status != tt.status || code != tt.code {
			t.Errorf("%s: %v (status %d %q), want %d %q", tt.name, err, status, code, tt.status, tt.code)
		}
	}
	// The quota refusal says when it resets, in the message and in Retry-After.
	_, err := f.svc.Book(alice, NewBooking{Lane: "b", Start: t0.Add(3 * h), End: t0.Add(7 * h)})
	var se *llm.StatusError
	if !errors.As(err, &se) || se.RetryAfter != store.WeekStart(t0).Add(store.Week).Sub(t0) {
		t.Errorf("quota: %v, want Retry-After until next Monday", err)
	}
	// A starting time a moment ago is fine ("now" typed a moment ago), and a lane booking on
	// another device does not conflict.
	if _, err := f.svc.Book(alice, NewBooking{Lane: "c", Start: t0.Add(-10 * time.Second), End: t0.Add(h)}); err != nil {
		t.Errorf("lane on gpu1 starting a moment ago: %v", err)
	}
	if got := f.audit.all(); len(got) != 2 {
		t.Errorf("audited %v, want the two bookings made", got)
	}
}

func TestApprovalFlow(t *testing.T) {
	f := newFixture(t, Policy{NeedsApproval: true})
	alice, bob, root := as("alice", false), as("bob", false), as("root", true)
	b, err := f.svc.Book(alice, NewBooking{Lane: "a", Start: t0.Add(time.Hour), End: t0.Add(2 * time.Hour)})
	if err != nil || b.State != Pending || b.Lane != "lane-a" || b.Device != "gpu0" || b.PersonName != "alice" {
		t.Fatalf("book: %+v, %v; want pending on lane-a, gpu0", b, err)
	}
	// A pending booking holds its window already.
	if _, err := f.svc.Book(bob, NewBooking{Device: "gpu0", Start: t0, End: t0.Add(90 * time.Minute)}); !isCode(err, "booking_conflict") {
		t.Errorf("over a pending booking: %v, want booking_conflict", err)
	}
	_, err = f.svc.Approve(alice, b.ID)
	var se *llm.StatusError
	if !errors.As(err, &se) || se.Status != 403 || se.Code != "admin_required" {
		t.Fatalf("self-approval: %v, want 403 admin_required", err)
	}
	if _, err := f.svc.Reject(bob, b.ID); !isCode(err, "admin_required") {
		t.Errorf("member rejecting: %v, want admin_required", err)
	}
	changed := f.svc.Changed()
	got, err := f.svc.Approve(root, b.ID)
	if err != nil || got.State != Approved || got.DecidedBy != "root" || !got.DecidedAt.Equal(t0) {
		t.Fatalf("approve: %+v, %v", got, err)
	}
	select {
	case <-changed:
	default:
		t.Error("Changed not signalled by an approval")
	}
	if _, err := f.svc.Approve(root, b.ID); !isCode(err, "invalid_booking_state") {
		t.Errorf("approve twice: %v, want invalid_booking_state", err)
	}
	if _, err := f.svc.Approve(root, "bk-nope"); !isCode(err, "booking_not_found") {
		t.Errorf("approve unknown: %v, want booking_not_found", err)
	}
	// An admin's own booking needs no approval; a rejected one frees its window.
	own, err := f.svc.Book(root, NewBooking{Lane: "b", Start: t0.Add(3 * time.Hour), End: t0.Add(4 * time.Hour)})
	if err != nil || own.State != Approved {
		t.Errorf("admin's booking: %+v, %v, want approved", own, err)
	}
	p, _ := f.svc.Book(bob, NewBooking{Lane: "c", Start: t0.Add(time.Hour), End: t0.Add(2 * time.Hour)})
	if r, err := f.svc.Reject(root, p.ID); err != nil || r.State != Rejected {
		t.Errorf("reject: %+v, %v", r, err)
	}
	if _, err := f.svc.Book(alice, NewBooking{Lane: "c", Start: t0.Add(time.Hour), End: t0.Add(2 * time.Hour)}); err != nil {
		t.Errorf("after a rejection: %v", err)
	}
	want := []string{"booking.create " + b.ID + " alice", "booking.approve " + b.ID + " root", "booking.create " + own.ID + " root",
		"booking.create " + p.ID + " bob", "booking.reject " + p.ID + " root"}
	if got := f.audit.all(); len(got) < len(want) || !slices.Equal(got[:len(want)], want) {
		t.Errorf("audit %v, want it to begin %v", got, want)
	}
	// Lists: a member sees their own; everyone's is for admins.
	mine, err := f.svc.List(bob, ListQuery{})
	if err != nil || len(mine) != 1 || mine[0].ID != p.ID {
		t.Errorf("bob's list: %+v, %v", mine, err)
	}
	if _, err := f.svc.List(bob, ListQuery{All: true}); !isCode(err, "admin_required") {
		t.Errorf("member listing all: %v", err)
	}
	if all, err := f.svc.List(root, ListQuery{All: true}); err != nil || len(all) != 4 {
		t.Errorf("admin's list: %d bookings, %v; want 4", len(all), err)
	}
}

func TestCancelActiveNext(t *testing.T) {
	f := newFixture(t, Policy{})
	alice, bob, root := as("alice", false), as("bob", false), as("root", true)
	h := time.Hour
	a, _ := f.svc.Book(alice, NewBooking{Lane: "a", Model: "qwen3", Start: t0.Add(h), End: t0.Add(2 * h)})
	d, _ := f.svc.Book(bob, NewBooking{Device: "gpu1", Start: t0.Add(30 * time.Minute), End: t0.Add(3 * h)})
	next, ok, err := f.svc.Next(alice, t0)
	if err != nil || !ok || next.Booking.ID != d.ID || !next.Starts || !next.At.Equal(t0.Add(30*time.Minute)) {
		t.Fatalf("Next at t0: %+v %v %v, want bob's device booking starting", next, ok, err)
	}
	f.set(t0.Add(90 * time.Minute))
	active, err := f.svc.Active(alice, f.now)
	if err != nil || len(active) != 2 {
		t.Fatalf("Active: %+v, %v; want both", active, err)
	}
	next, _, _ = f.svc.Next(alice, f.now)
	if next.Booking.ID != a.ID || next.Starts || !next.At.Equal(t0.Add(2*h)) {
		t.Errorf("Next at 10:30: %+v, want alice's booking ending", next)
	}
	// Someone else's booking is not theirs to cancel (nor to know of); a running one ends now.
	if _, err := f.svc.Cancel(alice, d.ID); !isCode(err, "booking_not_found") {
		t.Errorf("cancel another's: %v, want booking_not_found", err)
	}
	c, err := f.svc.Cancel(alice, a.ID)
	if err != nil || c.State != Ended || !c.End.Equal(f.now) {
		t.Errorf("cancel a running booking: %+v, %v; want ended now", c, err)
	}
	if _, err := f.svc.Cancel(alice, a.ID); !isCode(err, "invalid_booking_state") {
		t.Errorf("cancel twice: %v", err)
	}
	later, _ := f.svc.Book(alice, NewBooking{Lane: "a", Start: t0.Add(5 * h), End: t0.Add(6 * h)})
	if c, err := f.svc.Cancel(root, later.ID); err != nil || c.State != Cancelled {
		t.Errorf("admin cancels a future booking: %+v, %v", c, err)
	}
	// Bookings end on time: past its end, Next records it ended and has nothing ahead.
	f.set(t0.Add(3 * h))
	if _, ok, err := f.svc.Next(alice, f.now); ok || err != nil {
		t.Errorf("Next after all: ok %v, %v", ok, err)
	}
	all, _ := f.svc.List(root, ListQuery{All: true})
	for _, b := range all {
		if b.ID == d.ID && b.State != Ended {
			t.Errorf("bob's device booking is %s after its end, want ended", b.State)
		}
	}
	if active, _ := f.svc.Active(alice, f.now); len(active) != 0 {
		t.Errorf("Active after all: %+v", active)
	}
	steps := f.audit.all()
	if steps[len(steps)-1] != "booking.end "+d.ID+" alice" {
		t.Errorf("last audit step %q, want the end of %s", steps[len(steps)-1], d.ID)
	}
}

func TestParseTime(t *testing.T) {
	for in, want := range map[string]time.Time{
		"now": t0, "+2h": t0.Add(2 * time.Hour), "+1h30m": t0.Add(90 * time.Minute),
		"2026-06-02T10:00:00+02:00": time.Date(2026, 6, 2, 8, 0, 0, 0, time.UTC),
	} {
		if got, err := ParseTime(in, t0); err != nil || !got.Equal(want) {
			t.Errorf("ParseTime(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "tomorrow", "+-2h", "+2x", "2026-06-02"} {
		if _, err := ParseTime(in, t0); !errors.Is(err, llm.ErrInvalidInput) {
			t.Errorf("ParseTime(%q): %v, want invalid input", in, err)
		}
	}
}

func isCode(err error, code string) bool {
	var se *llm.StatusError
	return errors.As(err, &se) && se.Code == code
}

// TestPersonFrom: a person's key books as the person; a key of nobody as the key; no keys as
// the local admin.
func TestPersonFrom(t *testing.T) {
	id := &auth.Identity{ID: "key-1", Name: "laptop", Person: &auth.Person{ID: "p-1", Name: "alice", Role: auth.RoleAdmin}, Admin: true}
	if got := PersonFrom(auth.NewContext(context.Background(), id)); got != (Person{ID: "p-1", Name: "alice", Admin: true}) {
		t.Errorf("person's key: %+v", got)
	}
	if got := PersonFrom(as("ci", false)); got != (Person{ID: "key-ci", Name: "ci"}) {
		t.Errorf("key of nobody: %+v", got)
	}
	if got := PersonFrom(context.Background()); got != Local {
		t.Errorf("no keys: %+v", got)
	}
}
