package bookings

import (
	"testing"
	"time"
)

// TestEndPerson: a disabled person's bookings stop holding their lanes: the running one ends
// now, the ones ahead are cancelled, each audited; someone else's booking is left alone, and
// nothing is active for the person any more.
func TestEndPerson(t *testing.T) {
	f := newFixture(t, Policy{NeedsApproval: true})
	alice, bob, root := as("alice", false), as("bob", false), as("root", true)
	h := time.Hour
	running, _ := f.svc.Book(root, NewBooking{Lane: "a", Start: t0, End: t0.Add(2 * h)})
	if _, err := f.svc.Book(root, NewBooking{Lane: "b", Start: t0.Add(3 * h), End: t0.Add(4 * h)}); err != nil {
		t.Fatal(err)
	}
	pending, err := f.svc.Book(bob, NewBooking{Lane: "c", Start: t0.Add(h), End: t0.Add(2 * h)})
	if err != nil || pending.State != Pending {
		t.Fatalf("bob's booking: %+v %v", pending, err)
	}
	other, _ := f.svc.Book(alice, NewBooking{Lane: "c", Start: t0.Add(5 * h), End: t0.Add(6 * h)})
	changed := f.svc.Changed()
	f.set(t0.Add(30 * time.Minute))
	ended, err := f.svc.EndPerson(root, "key-root")
	if err != nil || len(ended) != 2 {
		t.Fatalf("EndPerson: %+v %v, want root's two bookings", ended, err)
	}
	if ended[0].ID != running.ID || ended[0].State != Ended || !ended[0].End.Equal(f.now) || ended[1].State != Cancelled {
		t.Errorf("ended %+v, want the running one ended now and the later one cancelled", ended)
	}
	select {
	case <-changed:
	default:
		t.Error("the change was not signalled (the lanes' router would keep the old bookings)")
	}
	if active, _ := f.svc.Active(root, f.now); len(active) != 0 {
		t.Errorf("still active: %+v", active)
	}
	if ended, _ := f.svc.EndPerson(bob, "key-bob"); len(ended) != 1 || ended[0].State != Cancelled {
		t.Errorf("bob's pending booking: %+v, want cancelled", ended)
	}
	all, _ := f.svc.List(root, ListQuery{All: true})
	for _, b := range all {
		if b.ID == other.ID && b.State != Pending {
			t.Errorf("alice's booking became %s", b.State)
		}
	}
	if got := f.audit.all(); len(got) != 7 || got[4] != "booking.cancel "+running.ID+" root" {
		t.Errorf("audit %v, want 4 bookings and 3 cancellations, by the one who disabled", got)
	}
}
