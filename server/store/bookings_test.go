package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

func booking(id, person, lane, device string, start, end time.Time) Booking {
	return Booking{ID: id, PersonID: person, PersonName: person, Lane: lane, Device: device, Start: start, End: end, State: BookingApproved}
}

func TestInsertBookingOverlaps(t *testing.T) {
	s, ctx := openTest(t), context.Background()
	t0 := time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC) // a Monday
	h := time.Hour
	if err := s.InsertBooking(ctx, booking("bk-1", "alice", "a", "gpu0", t0, t0.Add(2*h)), 0); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name       string
		b          Booking
		conflicted bool
	}{
		{"same lane, overlapping", booking("bk-2", "bob", "a", "gpu0", t0.Add(h), t0.Add(3*h)), true},
		{"same lane, inside", booking("bk-2", "bob", "a", "gpu0", t0.Add(30*time.Minute), t0.Add(h)), true},
		{"same lane, touching after", booking("bk-2", "bob", "a", "gpu0", t0.Add(2*h), t0.Add(3*h)), false},
		{"other lane, same device", booking("bk-3", "bob", "b", "gpu0", t0, t0.Add(2*h)), false},
		{"whole device over a lane booking", booking("bk-4", "bob", "", "gpu0", t0.Add(h), t0.Add(4*h)), true},
		{"whole other device", booking("bk-4", "bob", "", "gpu1", t0, t0.Add(2*h)), false},
		{"lane on a whole-device booking", booking("bk-5", "carol", "c", "gpu1", t0.Add(h), t0.Add(90*time.Minute)), true},
	} {
		err := s.InsertBooking(ctx, tt.b, 0)
		var ce *BookingConflictError
		if got := errors.As(err, &ce); got != tt.conflicted || (!tt.conflicted && err != nil) {
			t.Errorf("%s: err %v, want conflict %v", tt.name, err, tt.conflicted)
		}
	}
	// A cancelled booking frees its window.
	if _, err := s.ChangeBooking(ctx, "bk-1", BookingChange{From: []string{BookingApproved}, To: BookingCancelled}); err != nil {
		t.Fatal(err)
	}
	if err := s.InsertBooking(ctx, booking("bk-6", "bob", "a", "gpu0", t0, t0.Add(h)), 0); err != nil {
		t.Errorf("after cancel: %v", err)
	}
}

// TestInsertBookingRace books one window from many goroutines: exactly one wins.
func TestInsertBookingRace(t *testing.T) {
	s, ctx := openTest(t), context.Background()
	t0 := time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)
	const n = 16
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			lane := "a"
			if i%2 == 1 {
				lane = "" // whole-device bookings race the lane bookings too
			}
			errs[i] = s.InsertBooking(ctx, booking(fmt.Sprintf("bk-%d", i), fmt.Sprintf("p%d", i), lane, "gpu0",
				t0.Add(time.Duration(i)*time.Minute), t0.Add(time.Hour)), 0)
		}()
	}
	close(start)
	wg.Wait()
	won := 0
	for i, err := range errs {
		var ce *BookingConflictError
		switch {
		case err == nil:
			won++
		case !errors.As(err, &ce):
			t.Errorf("booking %d: %v, want a conflict", i, err)
		}
	}
	if won != 1 {
		t.Errorf("%d bookings won, want exactly 1", won)
	}
	all, err := s.Bookings(ctx, BookingFilter{})
	if err != nil || len(all) != 1 {
		t.Errorf("stored %d bookings (%v), want 1", len(all), err)
	}
}

func TestInsertBookingWeekBudget(t *testing.T) {
	s, ctx := openTest(t), context.Background()
	mon := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	if got := WeekStart(mon.Add(6*24*time.Hour + 23*time.Hour)); !got.Equal(mon) {
		t.Fatalf("WeekStart(Sunday) = %v, want %v", got, mon)
	}
	budget := 4 * time.Hour
	if err := s.InsertBooking(ctx, booking("bk-1", "alice", "a", "gpu0", mon.Add(10*time.Hour), mon.Add(13*time.Hour)), budget); err != nil {
		t.Fatal(err)
	}
	err := s.InsertBooking(ctx, booking("bk-2", "alice", "b", "gpu0", mon.Add(30*time.Hour), mon.Add(32*time.Hour)), budget)
	var qe *BookingQuotaError
	if !errors.As(err, &qe) || !qe.Reset.Equal(mon.Add(Week)) || qe.Used != 3*time.Hour || qe.Asked != 2*time.Hour {
		t.Fatalf("over budget: %v (%+v), want a quota error resetting next Monday", err, qe)
	}
	// Another person has their own budget; the next week is a fresh one; a booking across
	// the week's end counts its part in each week.
	if err := s.InsertBooking(ctx, booking("bk-3", "bob", "b", "gpu0", mon.Add(30*time.Hour), mon.Add(32*time.Hour)), budget); err != nil {
		t.Errorf("bob: %v", err)
	}
	if err := s.InsertBooking(ctx, booking("bk-4", "alice", "b", "gpu0", mon.Add(Week-time.Hour), mon.Add(Week+3*time.Hour)), budget); err != nil {
		t.Errorf("across the week's end: %v", err)
	}
	if err := s.InsertBooking(ctx, booking("bk-5", "alice", "c", "gpu0", mon.Add(Week+5*time.Hour), mon.Add(Week+7*time.Hour)), budget); !errors.As(err, &qe) {
		t.Errorf("second week over budget: %v", err)
	}
}

func TestChangeAndEndBookings(t *testing.T) {
	s, ctx := openTest(t), context.Background()
	t0 := time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)
	b := booking("bk-1", "alice", "a", "gpu0", t0, t0.Add(time.Hour))
	b.State, b.Model = BookingPending, "qwen3"
	if err := s.InsertBooking(ctx, b, 0); err != nil {
		t.Fatal(err)
	}
	got, err := s.ChangeBooking(ctx, "bk-1", BookingChange{From: []string{BookingPending}, To: BookingApproved, DecidedBy: "root", DecidedAt: t0})
	if err != nil || got.State != BookingApproved || got.DecidedBy != "root" || !got.DecidedAt.Equal(t0) {
		t.Fatalf("approve: %+v, %v", got, err)
	}
	if _, err := s.ChangeBooking(ctx, "bk-1", BookingChange{From: []string{BookingPending}, To: BookingRejected}); !errors.Is(err, ErrBookingState) {
		t.Errorf("reject an approved booking: %v, want ErrBookingState", err)
	}
	if _, err := s.ChangeBooking(ctx, "bk-nope", BookingChange{From: []string{BookingPending}, To: BookingRejected}); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown booking: %v, want ErrNotFound", err)
	}
	ended, err := s.EndBookings(ctx, t0.Add(time.Hour))
	if err != nil || len(ended) != 1 || ended[0].ID != "bk-1" {
		t.Fatalf("EndBookings: %+v, %v", ended, err)
	}
	stored, err := s.Booking(ctx, "bk-1")
	if err != nil || stored.State != BookingEnded || stored.Model != "qwen3" || !stored.End.Equal(t0.Add(time.Hour)) {
		t.Errorf("stored: %+v, %v", stored, err)
	}
	if again, _ := s.EndBookings(ctx, t0.Add(2*time.Hour)); len(again) != 0 {
		t.Errorf("ended twice: %+v", again)
	}
}
