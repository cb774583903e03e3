package app

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/bookings"
	"github.com/superfluid/superfluid/server/people"
	"github.com/superfluid/superfluid/server/store"
)

// TestBookingEndAudited: a booking that ends on time is ended by the server, whoever's request
// happened to notice it (the lists record the ended bookings first): the audit log names no
// person for it, never the member whose list ran into another person's booking ending.
func TestBookingEndAudited(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(filepath.Join(t.TempDir(), "superfluid.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ppl := people.New(people.Config{Store: st, Hash: people.HashParams{Memory: 64, Time: 1, Threads: 1}})
	now := time.Now()
	svc, err := bookings.New(bookings.Config{Store: st, Audit: auditBookings(ppl, false), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	alice := auth.NewContext(ctx, &auth.Identity{ID: "key-a", Name: "alices", Person: &auth.Person{ID: "person-a", Name: "alice"}})
	bob := auth.NewContext(ctx, &auth.Identity{ID: "key-b", Name: "bobs", Person: &auth.Person{ID: "person-b", Name: "bob"}})
	if _, err := svc.Book(alice, bookings.NewBooking{Device: "cpu", Start: now, End: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Hour)
	if _, err := svc.List(bob, bookings.ListQuery{}); err != nil { // bob's own list ends alice's booking
		t.Fatal(err)
	}
	entries, err := st.Audit(ctx, store.AuditQuery{Action: bookings.ActionEnd})
	if err != nil || len(entries) != 1 {
		t.Fatalf("booking.end entries: %+v %v", entries, err)
	}
	if e := entries[0]; e.ActorPerson != "" || e.ActorName != "" || e.ActorKey != "" {
		t.Fatalf("the end of alice's booking is audited as done by %q (key %q)", e.ActorName, e.ActorKey)
	}
}
