package app

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/server/store"
	"github.com/superfluid/superfluid/tray"
)

// TestDesktopTeam: the desktop app in team mode drives the same lanes manager and bookings
// service the admin API serves (a lane added from the desktop is the API's, a booking made
// there holds the lane), and its changes are in the audit log as the desktop's, the bookings'
// through the audit hook serve --team uses.
func TestDesktopTeam(t *testing.T) {
	cfg := testConfig(t, "")
	cfg.Team = true
	a, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := a.startTeam(); err != nil {
		t.Fatal(err)
	}
	c := newController(a)
	defer c.Close()
	if !c.Team() {
		t.Fatal("the desktop controller of a --team app is not in team mode")
	}
	if err := c.AddLane(tray.NewTeamLane{Name: "up", Engine: "openai", Model: "qwen3", URL: "http://127.0.0.1:1/v1", UpstreamKey: "sk-secret"}); err != nil {
		t.Fatal(err)
	}
	served, err := a.team.lanes.List(context.Background())
	if err != nil || len(served) != 1 || served[0].Name != "up" || !served[0].HasKey {
		t.Fatalf("the admin API's lanes: %+v %v", served, err)
	}
	b, err := c.Book(tray.NewBooking{Lane: "up", Start: "now", Length: "1h"})
	if err != nil || b.State != tray.BookingApproved || b.Lane != "up" {
		t.Fatalf("book: %+v %v", b, err)
	}
	if err := c.RemoveLane("up"); err == nil || !strings.Contains(err.Error(), "is booked") {
		t.Fatalf("removing the booked lane: %v", err)
	}
	if err := c.CancelBooking(b.ID); err != nil {
		t.Fatal(err)
	}
	if err := c.RemoveLane("up"); err != nil {
		t.Fatal(err)
	}
	entries, err := a.people.Audit(context.Background(), store.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		var d map[string]any
		_ = json.Unmarshal(e.Detail, &d)
		if strings.Contains(string(e.Detail), "sk-secret") {
			t.Errorf("the upstream key is in the audit log: %s", e.Detail)
		}
		if strings.HasPrefix(e.Action, "lane.") || strings.HasPrefix(e.Action, "booking.") {
			got = append(got, e.Action+" via "+d["via"].(string))
		}
	}
	want := "lane.remove via desktop,booking.cancel via desktop,booking.create via desktop,lane.create via desktop"
	if strings.Join(got, ",") != want {
		t.Fatalf("audit %q, want %q", got, want)
	}
}
