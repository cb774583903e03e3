package core

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/core/qos"
)

// TestQoSGateFairShare: within a class the gate grants by owner in turn (round-robin by key,
// the person in team mode), so one owner's many queued requests cannot starve another's one;
// without keys everyone is one owner and arrival order holds (TestQoSGateOrder).
func TestQoSGateFairShare(t *testing.T) {
	as := func(id string) context.Context {
		who := &auth.Identity{ID: id}
		if id == "p" || id == "q" { // two keys of one person
			who.Person = &auth.Person{ID: "pat", Name: "Pat"}
		}
		return auth.NewContext(context.Background(), who)
	}
	tests := []struct {
		name    string
		holder  string
		waiters []string // owner/name, in arrival order
		want    []string
	}{
		{"one owner's many, then another's one", "a",
			[]string{"a/a1", "a/a2", "a/a3", "a/a4", "a/a5", "b/b1"}, []string{"b1", "a1", "a2", "a3", "a4", "a5"}},
		{"a person's keys are one owner", "a",
			[]string{"p/p1", "q/q1", "p/p2", "b/b1"}, []string{"p1", "b1", "q1", "p2"}},
		{"owners take turns", "c",
			[]string{"a/a1", "a/a2", "a/a3", "b/b1", "b/b2", "c/c1"}, []string{"a1", "b1", "c1", "a2", "b2", "a3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newGateRun(t, 1, 0)
			hold, _, err := r.g.acquire(as(tt.holder), qos.Interactive, 1, r.lanes, r.reserve, r.ownerReserve)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.waiters {
				owner, name, _ := strings.Cut(w, "/")
				r.join(as(owner), name, qos.Interactive, 1)
			}
			if got := r.order(hold, len(tt.waiters)); !slices.Equal(got, tt.want) {
				t.Fatalf("granted %v, want %v", got, tt.want)
			}
		})
	}
}

// TestQoSGateOwnerReserve: with an owner reserve of one (team mode), while another person has
// asked for a lane within the last minute, one person never holds the last lane of a 4-lane
// model, so the other's request is granted at once instead of waiting for a whole generation;
// the held-back request goes when a lane of its owner's comes back. A person alone, a gate
// without the reserve, and requests without a key take the fourth lane.
func TestQoSGateOwnerReserve(t *testing.T) {
	as := func(id string) context.Context {
		if id == "" {
			return context.Background()
		}
		return auth.NewContext(context.Background(), &auth.Identity{ID: id, Person: &auth.Person{ID: id}})
	}
	grantedNow := func(r *gateRun) (string, bool) {
		select {
		case g := <-r.granted:
			return g.name, true
		default:
			return "", false
		}
	}
	for _, tt := range []struct {
		name         string
		owner        string
		ownerReserve int
		bobSeen      bool // bob asked for a lane a moment before
		heldBack     bool
	}{
		{"a person while another is about", "alice", 1, true, true},
		{"a person alone", "alice", 1, false, false},
		{"a person without the reserve", "alice", 0, true, false},
		{"no key", "", 1, true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newGateRun(t, 4, 0)
			r.ownerReserve = tt.ownerReserve
			if tt.bobSeen {
				rel, _, err := r.g.acquire(as("bob"), qos.Interactive, 1, r.lanes, r.reserve, r.ownerReserve)
				if err != nil {
					t.Fatal(err)
				}
				rel()
			}
			var held []func()
			for range 3 {
				rel, _, err := r.g.acquire(as(tt.owner), qos.Interactive, 1, r.lanes, r.reserve, r.ownerReserve)
				if err != nil {
					t.Fatal(err)
				}
				held = append(held, rel)
			}
			r.join(as(tt.owner), "fourth", qos.Interactive, 1)
			name, ok := grantedNow(r)
			if ok == tt.heldBack {
				t.Fatalf("the owner's fourth request granted at once: %v (%q), want %v", ok, name, !tt.heldBack)
			}
			if !tt.heldBack {
				return
			}
			r.join(as("bob"), "bob", qos.Interactive, 1)
			if name, ok := grantedNow(r); !ok || name != "bob" {
				t.Fatalf("another person's request: granted %v %q, want bob at once", ok, name)
			}
			held[0]()
			if g := <-r.granted; g.name != "fourth" {
				t.Fatalf("after the owner gave a lane back: %q granted, want fourth", g.name)
			}
		})
	}
}
