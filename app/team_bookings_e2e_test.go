package app

import (
	"strings"
	"testing"
)

// TestTeamBookingsE2E: serve --team with two people (each with a key of their own) over the
// real worker. alice books the lane through /v1/bookings: bob gets 403 gpu_reserved (until
// when, in the message) while alice is served; cancelled, it frees the lane. bob's whole-device
// booking then gives him 503 gpu_exclusive and alice 403 gpu_reserved. Every step is in the
// audit log under the person who took it.
func TestTeamBookingsE2E(t *testing.T) {
	cfg := testConfig(t, testModel)
	cfg.Team = true
	keys := teamPeople(t, cfg, "root", "alice", "bob")
	a, srv := startServer(t, cfg, false)
	model := a.preload.ID
	do := teamCaller(t, srv.URL, keys)
	errOf := func(v map[string]any) (code, msg any) {
		e, _ := v["error"].(map[string]any)
		return e["code"], e["message"]
	}
	serveMainLane(t, do, model)
	chat := func(who string) (int, map[string]any) {
		code, v, _ := do(who, "POST", "/v1/chat/completions", `{"model": "`+model+`", "max_tokens": 2, "messages": [{"role": "user", "content": "hi"}]}`)
		return code, v
	}
	code, v, body := do("alice", "POST", "/v1/bookings", `{"lane": "main", "start": "now", "end": "+1h"}`)
	if code != 201 || v["state"] != "approved" || v["device"] != "cpu" || v["person"] != "alice" {
		t.Fatalf("alice books main: %d %s", code, body)
	}
	booking := v["id"].(string)
	if code, v := chat("bob"); code != 403 {
		t.Errorf("bob during alice's booking: %d %v, want 403 gpu_reserved", code, v)
	} else if c, msg := errOf(v); c != "gpu_reserved" || !strings.Contains(msg.(string), "until") {
		t.Errorf("bob's refusal: %v %v", c, msg)
	}
	if code, v := chat("alice"); code != 200 {
		t.Errorf("alice on her booked lane: %d %v", code, v)
	}
	if code, _, body := do("bob", "DELETE", "/v1/bookings/"+booking, ""); code != 404 {
		t.Errorf("bob cancels alice's booking: %d %s, want 404", code, body)
	}
	if code, v, body := do("alice", "DELETE", "/v1/bookings/"+booking, ""); code != 200 || v["state"] != "ended" {
		t.Fatalf("alice cancels: %d %s", code, body)
	}
	if code, v := chat("bob"); code != 200 {
		t.Errorf("bob after the booking: %d %v", code, v)
	}
	if code, _, body := do("bob", "POST", "/v1/bookings", `{"device": "cpu", "start": "now", "end": "+30m"}`); code != 201 {
		t.Fatalf("bob books the device: %d %s", code, body)
	}
	if code, v := chat("bob"); code != 503 {
		t.Errorf("bob during his whole-device booking: %d %v, want 503 gpu_exclusive", code, v)
	} else if c, _ := errOf(v); c != "gpu_exclusive" {
		t.Errorf("bob's refusal: %v", c)
	}
	if code, v := chat("alice"); code != 403 {
		t.Errorf("alice during bob's device booking: %d %v, want 403 gpu_reserved", code, v)
	}
	if code, v, body := do("root", "GET", "/v1/admin/bookings", ""); code != 200 || len(v["data"].([]any)) != 2 {
		t.Errorf("admin list: %d %s", code, body)
	}
	_, v, body = do("root", "GET", "/v1/admin/audit", "")
	var steps []string
	for _, e := range v["data"].([]any) {
		e := e.(map[string]any)
		if action := e["action"].(string); strings.HasPrefix(action, "booking.") {
			steps = append(steps, action+" by "+e["actor"].(map[string]any)["user"].(string))
		}
	}
	want := []string{"booking.create by bob", "booking.cancel by alice", "booking.create by alice"} // newest first
	if strings.Join(steps, ", ") != strings.Join(want, ", ") {
		t.Errorf("audit log: %v, want %v\n%s", steps, want, body)
	}
}
