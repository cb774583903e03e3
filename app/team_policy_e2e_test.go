package app

import (
	"testing"
	"time"

	"github.com/superfluid/superfluid/server/store"
)

// TestTeamBookingPolicy: serve --team's booking flags reach the bookings: with
// --booking-approval a member's booking waits as pending until an admin approves it, a booking
// longer than --booking-max-length is refused (400), and past --booking-hours-per-week the next
// one is 429 quota_exceeded.
func TestTeamBookingPolicy(t *testing.T) {
	cfg := testConfig(t, testModel)
	cfg.Team, cfg.BookingApproval, cfg.BookingMaxLength, cfg.BookingHoursPerWeek = true, true, 2*time.Hour, 3
	keys := teamPeople(t, cfg, "root", "alice")
	a, srv := startServer(t, cfg, false)
	do := teamCaller(t, srv.URL, keys)
	errCode := func(v map[string]any) any { e, _ := v["error"].(map[string]any); return e["code"] }
	if code, _, body := do("root", "POST", "/v1/admin/lanes", `{"name": "main", "device": "cpu", "engine": "local", "model": "`+a.preload.ID+`"}`); code != 201 {
		t.Fatalf("add lane: %d %s", code, body)
	}
	code, v, body := do("alice", "POST", "/v1/bookings", `{"lane": "main", "start": "+1h", "end": "+3h"}`)
	if code != 201 || v["state"] != "pending" {
		t.Fatalf("alice's booking with approval on: %d %s, want pending", code, body)
	}
	id, _ := v["id"].(string)
	if code, v, body := do("root", "POST", "/v1/admin/bookings/"+id+"/approve", ""); code != 200 || v["state"] != "approved" {
		t.Fatalf("approve: %d %s", code, body)
	}
	if code, _, body := do("alice", "POST", "/v1/bookings", `{"lane": "main", "start": "+4h", "end": "+7h"}`); code != 400 {
		t.Errorf("a 3 h booking over the 2 h maximum: %d %s, want 400", code, body)
	}
	if now := time.Now(); !store.WeekStart(now).Equal(store.WeekStart(now.Add(6 * time.Hour))) {
		return // the bookings would fall in two weeks' budgets: the hours check needs one week
	}
	if code, v, body := do("alice", "POST", "/v1/bookings", `{"lane": "main", "start": "+4h", "end": "+5h30m"}`); code != 429 || errCode(v) != "quota_exceeded" {
		t.Errorf("past 3 h a week (2 h booked, 1.5 h more): %d %s, want 429 quota_exceeded", code, body)
	}
}
