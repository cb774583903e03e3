package sessions_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/superfluid/superfluid/server/servertest"
	"github.com/superfluid/superfluid/server/store"
	"github.com/superfluid/superfluid/server/web/sessions"
)

type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time { return c.now }

func newStore(t *testing.T) (*sessions.Store, *store.Store, *fakeClock) {
	st := servertest.Store(t)
	clk := &fakeClock{now: time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)}
	return sessions.New(sessions.Config{Store: st, Now: clk.Now}), st, clk
}

// TestSweep: the sweep deletes expired sessions and aged-out failures (a lookup then finds
// nothing at all, not an expired row), and keeps live ones.
func TestSweep(t *testing.T) {
	ctx := context.Background()
	s, _, clk := newStore(t)
	old, _, err := s.Create(ctx, "person-1")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Fail(ctx, "Bob", "10.0.0.1"); err != nil {
		t.Fatal(err)
	}
	clk.now = clk.now.Add(13 * time.Hour)
	live, _, err := s.Create(ctx, "person-2") // Create sweeps too, at most every 10 minutes
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Lookup(ctx, old); !errors.Is(err, sessions.ErrUnknown) {
		t.Fatalf("the idle session after the sweep: %v", err)
	}
	if sess, err := s.Lookup(ctx, live); err != nil || sess.PersonID != "person-2" {
		t.Fatalf("the live session: %+v %v", sess, err)
	}
	if _, locked, err := s.Locked(ctx, "bob", "10.0.0.1"); err != nil || locked {
		t.Fatalf("locked after the sweep: %v %v", locked, err)
	}
}

// TestIDsAreHashed: what the database keeps is not the id, and a lookup of the stored hash
// opens nothing.
func TestIDsAreHashed(t *testing.T) {
	ctx := context.Background()
	s, st, _ := newStore(t)
	id, sess, err := s.Create(ctx, "person-1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.WebSessionByHash(ctx, id); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the id itself is stored: %v", err)
	}
	if len(id) != 43 || sess.CSRFToken == "" || sess.CSRFToken == id {
		t.Fatalf("id %q, token %q", id, sess.CSRFToken)
	}
}

// TestLockedAccountCaseInsensitive: failures count per account whatever its case.
func TestLockedAccountCaseInsensitive(t *testing.T) {
	ctx := context.Background()
	s, _, clk := newStore(t)
	for i := range 10 {
		name := "bob"
		if i%2 == 0 {
			name = "BoB"
		}
		if err := s.Fail(ctx, name, "10.0.0."+string(rune('a'+i))); err != nil {
			t.Fatal(err)
		}
		clk.now = clk.now.Add(time.Second)
	}
	wait, locked, err := s.Locked(ctx, " BOB ", "10.9.9.9")
	if err != nil || !locked || wait != 15*time.Minute-10*time.Second {
		t.Fatalf("locked %v, wait %s, %v", locked, wait, err)
	}
}
