package lanes_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/lanes"
)

// route is the model the router picks for name as person, or its refusal.
func (b *bench) route(person, name string) (*core.Model, error) {
	ctx := context.Background()
	if person != "" {
		ctx = auth.NewContext(ctx, &auth.Identity{ID: "key-" + person, Name: person})
	}
	return b.svc.ModelFor(ctx, name) // through the core's hook
}

func (b *bench) visible(person string) []string {
	ctx := auth.NewContext(context.Background(), &auth.Identity{ID: "key-" + person, Name: person})
	var out []string
	for _, m := range b.svc.VisibleModels(ctx) {
		out = append(out, m.ID)
	}
	return out
}

// wantRefusal checks err is the spec's refusal with status and code.
func wantRefusal(t *testing.T, what string, err error, status int, code string) *llm.StatusError {
	t.Helper()
	var se *llm.StatusError
	if !errors.As(err, &se) || se.Status != status || se.Code != code {
		t.Fatalf("%s: %v, want %d %s", what, err, status, code)
	}
	return se
}

// TestRouteModelField walks "The model field" of the spec: served models, empty and unknown
// names, a booked lane first, another's booking (403 gpu_reserved, until when), a registered
// model no lane serves (409 model_not_loaded), one's own whole-GPU booking (503 gpu_exclusive),
// and what GET /v1/models lists for each person.
func TestRouteModelField(t *testing.T) {
	b := newBench(t)
	b.open()
	now := time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC)
	b.router.Now = func() time.Time { return now }
	a := b.add("a", "cuda:0", "alpha")
	bl := b.add("b", "cuda:1", "beta")
	onLane := func(l *lanes.Lane, m *core.Model, err error) bool {
		return err == nil && m == l.Model()
	}

	// No bookings: a served model goes to its lane; empty and unknown names to a free lane.
	if m, err := b.route("alice", "alpha"); !onLane(a, m, err) {
		t.Fatalf("alpha: %v", err)
	}
	if m, err := b.route("alice", "beta"); !onLane(bl, m, err) {
		t.Fatalf("beta: %v", err)
	}
	for _, name := range []string{"", "gpt-4o", "no-such-model"} {
		if _, err := b.route("alice", name); err != nil {
			t.Fatalf("%q: %v", name, err)
		}
	}
	wantRefusal(t, "gamma, registered but on no lane", func() error { _, err := b.route("alice", "gamma"); return err }(),
		http.StatusConflict, "model_not_loaded")

	// Bob books lane a until 16:00.
	until := now.Add(time.Hour)
	b.booked.set(lanes.Reservation{Lane: "a", PersonID: "key-bob", Start: now.Add(-time.Minute), End: until})
	_, err := b.route("alice", "alpha")
	se := wantRefusal(t, "alpha booked by bob", err, http.StatusForbidden, "gpu_reserved")
	if !strings.Contains(se.Message, until.Format(time.RFC3339)) {
		t.Fatalf("the message does not say until when: %s", se.Message)
	}
	if m, err := b.route("bob", "alpha"); !onLane(a, m, err) {
		t.Fatalf("bob's own lane: %v", err)
	}
	if m, err := b.route("bob", ""); !onLane(a, m, err) {
		t.Fatalf("bob's empty name goes to his booked lane: %v, %v", m, err)
	}
	if m, err := b.route("bob", "unknown"); !onLane(a, m, err) {
		t.Fatalf("bob's unknown name goes to his booked lane: %v, %v", m, err)
	}
	if m, err := b.route("alice", ""); !onLane(bl, m, err) {
		t.Fatalf("alice's empty name goes to the free lane: %v, %v", m, err)
	}
	if got := b.visible("alice"); len(got) != 1 || got[0] != "beta" {
		t.Fatalf("alice sees %v", got)
	}
	if got := b.visible("bob"); len(got) != 2 {
		t.Fatalf("bob sees %v", got)
	}
	// Without a key nobody's booking is one's own.
	wantRefusal(t, "no key", func() error { _, err := b.route("", "alpha"); return err }(), http.StatusForbidden, "gpu_reserved")

	// The booking is over: alpha is alice's again.
	now = until
	if m, err := b.route("alice", "alpha"); !onLane(a, m, err) {
		t.Fatalf("after the booking: %v", err)
	}

	// Alice books the whole GPU cuda:0: she gets gpu_exclusive for its model, bob gpu_reserved;
	// beta on cuda:1 still serves both.
	b.booked.set(lanes.Reservation{Device: "cuda:0", Whole: true, PersonID: "key-alice", Start: now, End: now.Add(2 * time.Hour)})
	wantRefusal(t, "alice's whole GPU", func() error { _, err := b.route("alice", "alpha"); return err }(),
		http.StatusServiceUnavailable, "gpu_exclusive")
	se = wantRefusal(t, "bob on alice's GPU", func() error { _, err := b.route("bob", "alpha"); return err }(),
		http.StatusForbidden, "gpu_reserved")
	if !strings.Contains(se.Message, now.Add(2*time.Hour).Format(time.RFC3339)) {
		t.Fatalf("until when: %s", se.Message)
	}
	for _, who := range []string{"alice", "bob"} {
		if m, err := b.route(who, "beta"); !onLane(bl, m, err) {
			t.Fatalf("%s beta on the other GPU: %v", who, err)
		}
		if m, err := b.route(who, ""); !onLane(bl, m, err) {
			t.Fatalf("%s empty name: %v", who, err)
		}
	}
	if got := b.visible("alice"); len(got) != 1 || got[0] != "beta" {
		t.Fatalf("alice sees %v during her GPU booking", got)
	}

	// With every lane on her GPU, alice's empty name is gpu_exclusive too.
	b.booked.set(lanes.Reservation{Device: "cuda:0", Whole: true, PersonID: "key-alice", Start: now, End: now.Add(time.Hour)},
		lanes.Reservation{Device: "cuda:1", Whole: true, PersonID: "key-alice", Start: now, End: now.Add(time.Hour)})
	wantRefusal(t, "alice, every GPU hers", func() error { _, err := b.route("alice", ""); return err }(),
		http.StatusServiceUnavailable, "gpu_exclusive")
	wantRefusal(t, "bob, every GPU alice's", func() error { _, err := b.route("bob", "whatever"); return err }(),
		http.StatusForbidden, "gpu_reserved")
	if got := b.visible("bob"); len(got) != 0 {
		t.Fatalf("bob sees %v", got)
	}
}

// TestRouteBookedLaneFirst: of two lanes serving one model, the caller's booked one wins.
func TestRouteBookedLaneFirst(t *testing.T) {
	b := newBench(t)
	b.open()
	b.add("one", "cuda:0", "alpha")
	two := b.add("two", "cuda:1", "alpha")
	b.booked.set(lanes.Reservation{Lane: "two", PersonID: "key-carol", Start: time.Now().Add(-time.Minute), End: time.Now().Add(time.Hour)})
	one := b.laneNamed("one")
	for range 3 {
		if m, err := b.route("carol", "alpha"); err != nil || m != two.Model() {
			t.Fatalf("carol: %v", err)
		}
		// Dave may not use lane two: lane one serves him.
		if m, err := b.route("dave", "alpha"); err != nil || m != one.Model() {
			t.Fatalf("dave: %v", err)
		}
	}
}

// TestRouteNoLanes: with no lane at all, every name is 409 model_not_loaded.
func TestRouteNoLanes(t *testing.T) {
	b := newBench(t)
	for _, name := range []string{"", "alpha", "unknown"} {
		wantRefusal(t, name, func() error { _, err := b.route("alice", name); return err }(), http.StatusConflict, "model_not_loaded")
	}
}

// TestRouteBookingIsThePersons: a booking belongs to the person who made it, by id: every key of
// that person uses the booked lane, and a key of nobody that happens to be named like the
// person (a key from before team mode) does not.
func TestRouteBookingIsThePersons(t *testing.T) {
	b := newBench(t)
	b.open()
	a := b.add("a", "cuda:0", "alpha")
	b.booked.set(lanes.Reservation{Lane: "a", PersonID: "person-1", Start: time.Now().Add(-time.Minute), End: time.Now().Add(time.Hour)})
	laptop := auth.NewContext(context.Background(), &auth.Identity{ID: "key-9", Name: "laptop", Person: &auth.Person{ID: "person-1", Name: "alice"}})
	if m, err := b.svc.ModelFor(laptop, "alpha"); err != nil || m != a.Model() {
		t.Fatalf("alice's key on her booked lane: %v", err)
	}
	namesake := auth.NewContext(context.Background(), &auth.Identity{ID: "key-8", Name: "alice"})
	_, err := b.svc.ModelFor(namesake, "alpha")
	wantRefusal(t, "a key of nobody named alice", err, http.StatusForbidden, "gpu_reserved")
}

// aliasCatalog resolves "alias-of-alpha" to the catalog's alpha, as the real catalog resolves
// a bare repository name ("OWNER/REPO") or a tag to the entry's id.
type aliasCatalog struct{ lanes.Catalog }

func (c aliasCatalog) Model(name string) (*core.Model, error) {
	if name == "alias-of-alpha" {
		name = "alpha"
	}
	return c.Catalog.Model(name)
}

// TestRouteCatalogAlias: a name the catalog resolves to the model a lane serves goes to that
// lane, not 409 model_not_loaded.
func TestRouteCatalogAlias(t *testing.T) {
	b := newBench(t)
	b.open()
	a := b.add("a", "cuda:0", "alpha")
	b.add("b", "cuda:1", "beta")
	r := lanes.NewRouter(b.mgr, b.booked, aliasCatalog{b.svc})
	m, err := r.Route(context.Background(), "alias-of-alpha")
	if err != nil || m != a.Model() {
		t.Fatalf("alias-of-alpha: %v, %v; want lane a's alpha", m, err)
	}
}

// TestRouteKeyModels: a key limited to some models (auth.Identity.Models) keeps its limit in
// team mode: another model is 404 model_not_found as without lanes, an empty name goes to a
// lane serving one it may use, and GET /v1/models lists only those.
func TestRouteKeyModels(t *testing.T) {
	b := newBench(t)
	b.open()
	a := b.add("a", "cuda:0", "alpha")
	b.add("b", "cuda:1", "beta")
	ctx := auth.NewContext(context.Background(), &auth.Identity{ID: "key-x", Name: "x", Models: []string{"alpha"}})
	if m, err := b.svc.ModelFor(ctx, "beta"); !errors.Is(err, llm.ErrModelNotFound) {
		t.Fatalf("beta for a key limited to alpha: %v, %v; want model_not_found", m, err)
	}
	for _, name := range []string{"", "alpha", "unknown-name"} {
		if m, err := b.svc.ModelFor(ctx, name); err != nil || m != a.Model() {
			t.Fatalf("%q for a key limited to alpha: %v, %v; want lane a", name, m, err)
		}
	}
	var ids []string
	for _, m := range b.svc.VisibleModels(ctx) {
		ids = append(ids, m.ID)
	}
	if strings.Join(ids, ",") != "alpha" {
		t.Fatalf("a key limited to alpha sees %v", ids)
	}
}
