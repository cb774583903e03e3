package app

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
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

// TestDesktopTeamKeepsKeysRequired: the --team desktop's server needs a key for every request
// as serve --team's does, also before any key exists (the first start): starting the server
// from the window must not make a keyless loopback request this machine's admin again, which
// could add a command lane (a process of the desktop's user) from any local account.
func TestDesktopTeamKeepsKeysRequired(t *testing.T) {
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t, "")
	cfg.Team = true
	cfg.Host, cfg.Port = "127.0.0.1", free.Addr().(*net.TCPAddr).Port
	free.Close()
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
	if err := c.StartServer(); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/v1/admin/lanes", "/v1/models"} {
		res, err := http.Get("http://" + c.Server().Address + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s without a key from the --team desktop's server: %d %s, want 401", path, res.StatusCode, body)
		}
	}
}
