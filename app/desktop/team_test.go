package desktop_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/superfluid/superfluid/app/desktop"
	"github.com/superfluid/superfluid/runtime/backends"
	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/runtime/models"
	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/bookings"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/lanes"
	"github.com/superfluid/superfluid/server/people"
	"github.com/superfluid/superfluid/server/servertest"
	"github.com/superfluid/superfluid/server/store"
	"github.com/superfluid/superfluid/tray"
)

// teamController is a controller in team mode over a real store in t.TempDir(): a catalog
// with the models m and m2 (fake workers), the lanes manager (a local lane loads its catalog
// model; an openai lane's upstream refuses), the bookings service (lanes by name, steps
// audited by where ctx says they came from) and the people's audit log.
func teamController(t *testing.T) (*desktop.Controller, *servertest.Catalog, *bookings.Service, *people.Service) {
	t.Helper()
	cat := servertest.NewCatalog(t, models.Config{})
	cat.AddModel(t, "m", gguftest.TinyLlamaOptions{})
	cat.AddModel(t, "m2", gguftest.TinyLlamaOptions{})
	st := cat.Store
	ppl := people.New(people.Config{Store: st})
	audit := func(ctx context.Context, action, target string, detail map[string]any) error {
		by := people.ActorOf(nil)
		if v := people.ViaFrom(ctx); v != "" {
			by.Via = v
		}
		return ppl.Record(ctx, by, action, target, detail)
	}
	mgr := lanes.NewManager(lanes.Config{Store: st, Devices: []lanes.Device{{Name: "cpu"}, {Name: "cuda:0", GPU: true}}, Catalog: cat.Svc,
		Audit: audit, // the lanes' writes audited as serve --team's hook does (app/team_follow.go)
		Factory: func(ctx context.Context, spec lanes.Spec) (*core.Model, func(), error) {
			if spec.Lane.Engine != string(lanes.Local) {
				return nil, nil, errors.New("dial tcp 127.0.0.1:1: connection refused")
			}
			m, err := cat.Svc.LoadModel(ctx, spec.Lane.Model)
			if err != nil {
				return nil, nil, err
			}
			return m, func() { _, _ = cat.Svc.UnloadModel(context.Background(), m.ID) }, nil
		}})
	if err := mgr.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mgr.Close(context.Background()) })
	bk, err := bookings.New(bookings.Config{Store: st, Policy: bookings.Policy{NeedsApproval: true},
		Audit: func(ctx context.Context, action, target string, _ any) error { return audit(ctx, action, target, nil) },
		ResolveLane: func(ctx context.Context, nameOrID string) (bookings.LaneRef, error) {
			l, err := st.Lane(ctx, nameOrID)
			return bookings.LaneRef{ID: l.ID, Device: l.Device}, err
		}})
	if err != nil {
		t.Fatal(err)
	}
	c := desktop.New(desktop.Deps{Service: cat.Svc, Store: st, Handler: http.NotFoundHandler(), Host: "127.0.0.1", Port: 1,
		Expose: func(string) error { return nil }, StopBackground: func(context.Context) error { return nil },
		StartBackground: func() error { return nil }, Runtimes: func() []backends.Backend { return nil },
		Team: &desktop.Team{Lanes: mgr, Devices: []lanes.Device{{Name: "cpu"}, {Name: "cuda:0", GPU: true}}, Bookings: bk, People: ppl}})
	t.Cleanup(c.Close)
	return c, cat, bk, ppl
}

// lane waits for the lane named name to be in state (a lane's engine starts in the background).
func lane(t *testing.T, c *desktop.Controller, name, state string) tray.TeamLane {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		all, err := c.Lanes()
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range all {
			if l.Name == name && l.State == state {
				return l
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("lane %s never %s: %+v", name, state, all)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestTeamLanesThroughTheManager: the desktop's lane actions are the lanes manager's (its
// refusals as they are), the states are the Lanes view's words, and each change is audited as
// made from the desktop.
func TestTeamLanesThroughTheManager(t *testing.T) {
	c, _, _, ppl := teamController(t)
	if !c.Team() || strings.Join(c.LaneDevices(), ",") != "cpu,cuda:0,remote" {
		t.Fatalf("team %v, devices %v", c.Team(), c.LaneDevices())
	}
	if err := c.AddLane(tray.NewTeamLane{Name: "big", Device: "cuda:0", Engine: "local", Model: "m"}); err != nil {
		t.Fatal(err)
	}
	if l := lane(t, c, "big", tray.LaneIdle); l.Device != "cuda:0" || l.Engine != "local" || l.Model != "m" || l.Upstream != "" {
		t.Fatalf("big %+v", l)
	}
	if err := c.AddLane(tray.NewTeamLane{Name: "up", Engine: "openai", Model: "qwen3", URL: "http://127.0.0.1:1/v1", UpstreamKey: "sk-up"}); err != nil {
		t.Fatal(err)
	}
	if l := lane(t, c, "up", tray.LaneFailed); l.Device != "remote" || !l.HasKey || l.Upstream != "http://127.0.0.1:1/v1" ||
		!strings.Contains(l.Err, "connection refused") {
		t.Fatalf("up %+v", l)
	}
	for _, bad := range []struct {
		lane tray.NewTeamLane
		want error
	}{
		{tray.NewTeamLane{Name: "big", Device: "cpu", Engine: "local", Model: "m"}, lanes.ErrLaneExists},
		{tray.NewTeamLane{Name: "x", Device: "cuda:7", Engine: "local", Model: "m"}, lanes.ErrUnknownDevice},
		{tray.NewTeamLane{Name: "x", Device: "cpu", Engine: "local", Model: "nope"}, lanes.ErrUnknownModel},
		{tray.NewTeamLane{Name: "x", Engine: "openai", Model: "qwen3"}, lanes.ErrInvalidLane},
		{tray.NewTeamLane{Name: "x", Device: "cpu", Engine: "docker", Model: "m"}, lanes.ErrUnknownEngine},
	} {
		if err := c.AddLane(bad.lane); !errors.Is(err, bad.want) {
			t.Errorf("add %+v: %v, want %v", bad.lane, err, bad.want)
		}
	}
	if err := c.SwitchLane("big", "nope"); !errors.Is(err, lanes.ErrUnknownModel) {
		t.Fatalf("switch to an unknown model: %v", err)
	}
	if err := c.SwitchLane("big", "m2"); err != nil {
		t.Fatal(err)
	}
	if l := lane(t, c, "big", tray.LaneIdle); l.Model != "m2" {
		t.Fatalf("after the switch %+v", l)
	}
	if !state(c, "m2").Loaded() {
		t.Fatalf("the lane's new model is not loaded: %+v", state(c, "m2"))
	}
	if err := c.RemoveLane("up"); err != nil {
		t.Fatal(err)
	}
	if err := c.RemoveLane("up"); !errors.Is(err, lanes.ErrLaneNotFound) {
		t.Fatalf("removing it again: %v", err)
	}
	all, _ := c.Lanes()
	if len(all) != 1 || all[0].Name != "big" {
		t.Fatalf("after remove %+v", all)
	}
	entries, err := ppl.Audit(context.Background(), store.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		var d map[string]any
		_ = json.Unmarshal(e.Detail, &d)
		if d["via"] != desktop.Via || strings.Contains(string(e.Detail), "sk-up") {
			t.Errorf("entry %s %s: %s", e.Action, e.Target, e.Detail)
		}
		got = append(got, e.Action+" "+e.Target)
	}
	if want := "lane.remove up,lane.switch big,lane.create up,lane.create big"; strings.Join(got, ",") != want {
		t.Fatalf("audit %q, want %q", got, want)
	}
}

// TestTeamBookingsThroughTheService: the desktop books as this machine's admin through the
// bookings service (approved at once, audited from the desktop); a taken window and a bad
// start say why; a member's pending booking is approved or rejected by "local"; a lane with a
// booking not ended cannot be removed until the booking is cancelled.
func TestTeamBookingsThroughTheService(t *testing.T) {
	c, _, bk, ppl := teamController(t)
	if err := c.AddLane(tray.NewTeamLane{Name: "big", Device: "cuda:0", Engine: "local", Model: "m"}); err != nil {
		t.Fatal(err)
	}
	lane(t, c, "big", tray.LaneIdle)
	mine, err := c.Book(tray.NewBooking{Lane: "big", Model: "m2", Start: "now", Length: "1h"})
	if err != nil {
		t.Fatal(err)
	}
	if mine.State != tray.BookingApproved || mine.Person != "local" || mine.Lane != "big" || mine.Device != "cuda:0" ||
		mine.End.Sub(mine.Start) != time.Hour {
		t.Fatalf("booked %+v", mine)
	}
	// The window is taken (409 booking_conflict), also for the whole device.
	for _, nb := range []tray.NewBooking{{Lane: "big", Start: "+30m", Length: "1h"}, {Device: "cuda:0", Start: "now", Length: "2h"}} {
		if _, err := c.Book(nb); err == nil || !strings.Contains(err.Error(), "the window is taken: booking "+mine.ID+" (approved) holds lane big from") {
			t.Fatalf("overlapping %+v: %v", nb, err)
		}
	}
	// A bad window (400) says why, without "invalid input".
	for nb, want := range map[tray.NewBooking]string{
		{Lane: "big", Start: "yesterday", Length: "1h"}:                                               `the start: time "yesterday" is not RFC 3339`,
		{Lane: "big", Start: "2020-01-01 09:00", Length: "1h"}:                                        "the booking starts in the past",
		{Lane: "big", Start: "+3h", Length: "soon"}:                                                   `the length "soon" is not a duration`,
		{Device: "cuda:0", Model: "m", Start: "+3h", Length: "1h"}:                                    "a whole-device booking serves no model",
		{Lane: "nope", Start: "+3h", Length: "1h"}:                                                    "nope",
		{Lane: "big", Start: time.Now().Add(5 * time.Hour).Format("2006-01-02 15:04"), Length: "-1h"}: "is not a duration",
	} {
		_, err := c.Book(nb)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "invalid input") {
			t.Errorf("book %+v: %v, want %q", nb, err, want)
		}
	}
	// A member's booking waits for an admin: the desktop approves one and rejects another.
	member := auth.NewContext(context.Background(), &auth.Identity{ID: "key-bob", Name: "bobs", Person: &auth.Person{ID: "p-bob", Name: "bob"}})
	later, err := bk.Book(member, bookings.NewBooking{Lane: "big", Start: time.Now().Add(2 * time.Hour), End: time.Now().Add(3 * time.Hour)})
	if err != nil || later.State != bookings.Pending {
		t.Fatalf("bob's booking: %+v %v", later, err)
	}
	whole, err := bk.Book(member, bookings.NewBooking{Device: "cpu", Start: time.Now().Add(time.Hour), End: time.Now().Add(2 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ApproveBooking(later.ID); err != nil {
		t.Fatal(err)
	}
	if err := c.ApproveBooking(later.ID); err == nil || !strings.Contains(err.Error(), "is approved") {
		t.Fatalf("approving twice: %v", err)
	}
	if err := c.RejectBooking(whole.ID); err != nil {
		t.Fatal(err)
	}
	list, err := c.Bookings()
	if err != nil || len(list) != 3 {
		t.Fatalf("bookings %+v %v", list, err)
	}
	byID := map[string]tray.Booking{}
	for _, b := range list {
		byID[b.ID] = b
	}
	if b := byID[later.ID]; b.State != tray.BookingApproved || b.DecidedBy != "local" || b.Person != "bob" || b.Lane != "big" {
		t.Fatalf("bob's approved booking %+v", b)
	}
	if b := byID[whole.ID]; b.State != tray.BookingRejected || b.Lane != "" || b.Device != "cpu" {
		t.Fatalf("bob's rejected booking %+v", b)
	}
	// The lane is booked (mine runs, bob's is ahead): removing it is refused, naming them.
	err = c.RemoveLane("big")
	if err == nil || !strings.Contains(err.Error(), "lane big is booked: local's approved booking") ||
		!strings.Contains(err.Error(), "(running)") || !strings.Contains(err.Error(), "bob's approved booking") {
		t.Fatalf("removing a booked lane: %v", err)
	}
	for _, id := range []string{mine.ID, later.ID} {
		if err := c.CancelBooking(id); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.CancelBooking(mine.ID); err == nil {
		t.Fatal("cancelled twice")
	}
	if err := c.RemoveLane("big"); err != nil {
		t.Fatalf("removing the lane after its bookings: %v", err)
	}
	entries, _ := ppl.Audit(context.Background(), store.AuditQuery{Limit: 100})
	counts := map[string]int{}
	for _, e := range entries {
		var d map[string]any
		_ = json.Unmarshal(e.Detail, &d)
		counts[e.Action+" via "+d["via"].(string)]++
	}
	for want, n := range map[string]int{"booking.create via desktop": 1, "booking.create via api": 2, "booking.approve via desktop": 1,
		"booking.reject via desktop": 1, "booking.cancel via desktop": 2, "lane.remove via desktop": 1} {
		if counts[want] != n {
			t.Errorf("%s: %d entries, want %d (all: %v)", want, counts[want], n, counts)
		}
	}
}

// TestTeamOff: outside team mode the controller says so, and starts nothing.
func TestTeamOff(t *testing.T) {
	c, _, _ := newController(t)
	if c.Team() || c.LaneDevices() != nil {
		t.Fatal("team mode without a Team")
	}
	if _, err := c.Lanes(); err == nil || !strings.Contains(err.Error(), "--team") {
		t.Fatalf("lanes outside team mode: %v", err)
	}
	if _, err := c.Book(tray.NewBooking{Lane: "x", Start: "now", Length: "1h"}); err == nil {
		t.Fatal("a booking outside team mode")
	}
}
