package web_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/superfluid/superfluid/server/bookings"
	"github.com/superfluid/superfluid/server/store"
)

// TestAdminReservations: a member's pending bookings, listed for the admin, approved and
// rejected, and the refusals (the audit of each decision is bookings.Service's, wired by app).
func TestAdminReservations(t *testing.T) {
	tt := newAdminTeam(t)
	tt.Bookings.SetPolicy(bookings.Policy{NeedsApproval: true})
	var ids []string
	for _, window := range [][2]string{{"+1h", "+2h"}, {"+3h", "+4h"}} {
		r := tt.withKey(t, tt.BobKey, "POST", "/v1/bookings", `{"lane": "main", "start": "`+window[0]+`", "end": "`+window[1]+`"}`)
		if r.status != 201 || r.obj["state"] != "pending" {
			t.Fatalf("bob books: %d %s", r.status, r.body)
		}
		ids = append(ids, r.obj["id"].(string))
	}
	root := tt.signIn(t, "root", "password0")
	r := root.do("GET", "/api/admin/reservations?state=pending", "")
	if r.status != 200 || field(r.list(), "id") != strings.Join(ids, ",") || field(r.list(), "person") != "bob,bob" {
		t.Fatalf("pending: %d %s", r.status, r.body)
	}
	if r := root.do("POST", "/api/admin/reservations/"+ids[0]+"/approve", ""); r.status != 200 || r.obj["state"] != "approved" || r.obj["decided_by"] != "root" {
		t.Errorf("approve: %d %s", r.status, r.body)
	}
	if r := root.do("POST", "/api/admin/reservations/"+ids[1]+"/reject", ""); r.status != 200 || r.obj["state"] != "rejected" {
		t.Errorf("reject: %d %s", r.status, r.body)
	}
	if r := root.do("GET", "/api/admin/reservations?state=pending", ""); r.status != 200 || len(r.list()) != 0 {
		t.Errorf("pending after deciding: %s", r.body)
	}
	if r := root.do("POST", "/api/admin/reservations/bk-nope/approve", ""); r.status != 404 || r.code() != "booking_not_found" {
		t.Errorf("approve unknown: %d %s", r.status, r.body)
	}
	if r := root.do("POST", "/api/admin/reservations/"+ids[0]+"/reject", ""); r.status < 400 || r.status >= 500 {
		t.Errorf("reject an approved booking: %d %s, want a refusal", r.status, r.body)
	}
	if r := root.do("GET", "/api/admin/reservations?state=soon", ""); r.status != 400 {
		t.Errorf("state=soon: %d %s, want 400", r.status, r.body)
	}
}

// TestAdminLanes: list with devices, add, switch, remove, and the refusals.
func TestAdminLanes(t *testing.T) {
	tt := newAdminTeam(t)
	root := tt.signIn(t, "root", "password0")
	r := root.do("GET", "/api/admin/lanes", "")
	if r.status != 200 || field(r.list(), "name") != "main" || field(r.list(), "state") != "serving" || !strings.Contains(string(r.body), `"devices":[{"name":"cpu"`) {
		t.Fatalf("list: %d %s", r.status, r.body)
	}
	if r := root.do("POST", "/api/admin/lanes", `{"name": "second", "device": "cpu", "engine": "local", "model": "alpha"}`); r.status != 201 || r.obj["name"] != "second" {
		t.Fatalf("add: %d %s", r.status, r.body)
	}
	for _, tc := range []struct {
		method, path, body string
		status             int
		code, param        string
	}{
		{"POST", "/api/admin/lanes", `{"name": "second", "device": "cpu", "engine": "local", "model": "alpha"}`, 409, "lane_exists", "name"},
		{"POST", "/api/admin/lanes", `{"name": "x", "device": "tpu", "engine": "local", "model": "alpha"}`, 400, "unknown_device", "device"},
		{"POST", "/api/admin/lanes", `{"name": "x", "device": "cpu", "engine": "magic", "model": "alpha"}`, 400, "invalid_body", "engine"},
		{"POST", "/api/admin/lanes", `{"name": "x", "device": "cpu", "engine": "local", "model": "nope"}`, 400, "model_not_found", "model"},
		{"POST", "/api/admin/lanes", `{"device": "cpu", "engine": "local"}`, 400, "invalid_body", "name"},
		{"PATCH", "/api/admin/lanes/ghost", `{"model": "alpha"}`, 404, "lane_not_found", ""},
		{"DELETE", "/api/admin/lanes/ghost", "", 404, "lane_not_found", ""},
	} {
		if r := root.do(tc.method, tc.path, tc.body); r.status != tc.status || r.code() != tc.code || r.param() != tc.param {
			t.Errorf("%s %s %s: %d %s, want %d %s param %q", tc.method, tc.path, tc.body, r.status, r.body, tc.status, tc.code, tc.param)
		}
	}
	if r := root.do("PATCH", "/api/admin/lanes/second", `{"model": "alpha"}`); r.status != 200 || r.obj["model"] != "alpha" {
		t.Errorf("switch: %d %s", r.status, r.body)
	}
	if r := root.do("DELETE", "/api/admin/lanes/second", ""); r.status != 200 || r.obj["deleted"] != true {
		t.Errorf("remove: %d %s", r.status, r.body)
	}
	if r := root.do("GET", "/api/admin/lanes", ""); field(r.list(), "name") != "main" {
		t.Errorf("after remove: %s", r.body)
	}
}

// TestAdminRuntime: the details, start by hand (a switch), stop's refusals, and the
// load history merging stored model events with the lanes' audited switches.
func TestAdminRuntime(t *testing.T) {
	tt := newAdminTeam(t)
	root := tt.signIn(t, "root", "password0")
	r := root.do("GET", "/api/admin/runtime", "")
	if r.status != 200 || !strings.Contains(string(r.body), `"backends":[{"name":"cpu"`) || !strings.Contains(string(r.body), `"name":"main"`) {
		t.Fatalf("runtime: %d %s", r.status, r.body)
	}
	if r := root.do("POST", "/api/admin/runtime/manual", `{"action": "start", "lane": "main"}`); r.status != 200 || r.obj["name"] != "main" || r.obj["model"] != "alpha" {
		t.Errorf("start: %d %s", r.status, r.body)
	}
	for _, tc := range []struct {
		body        string
		status      int
		code, param string
	}{
		{`{"action": "pause", "lane": "main"}`, 400, "invalid_body", "action"},
		{`{"action": "start"}`, 400, "invalid_body", "lane"},
		{`{"action": "start", "lane": "ghost"}`, 404, "lane_not_found", "lane"},
		{`{"action": "start", "lane": "main", "model": "nope"}`, 400, "model_not_found", "model"},
		{`{"action": "stop", "lane": "main", "model": "other"}`, 400, "invalid_value", "model"},
		// The test's core serves a fixed set of models: nothing to unload by hand.
		{`{"action": "stop", "lane": "main"}`, 400, "invalid_value", ""},
	} {
		if r := root.do("POST", "/api/admin/runtime/manual", tc.body); r.status != tc.status || r.code() != tc.code || r.param() != tc.param {
			t.Errorf("manual %s: %d %s, want %d %s param %q", tc.body, r.status, r.body, tc.status, tc.code, tc.param)
		}
	}

	// The test's lanes manager audits nothing (app wires its Audit); the history reads what the
	// app's would write for a switch.
	ctx := context.Background()
	at := time.Now().Add(time.Second)
	switched := json.RawMessage(`{"model": "alpha", "from": "beta"}`)
	if _, err := tt.Store.AppendAudit(ctx, store.AuditEntry{At: at.Add(-time.Second), Action: "lane.switch", Target: "main", ActorName: "root", Detail: switched}); err != nil {
		t.Fatal(err)
	}
	for i, ev := range []string{"loading", "loaded"} {
		if _, err := tt.Store.AppendRuntimeEvent(ctx, store.RuntimeEvent{At: at.Add(time.Duration(i) * time.Second), Event: ev, Lane: "main", Model: "alpha"}); err != nil {
			t.Fatal(err)
		}
	}
	r = root.do("GET", "/api/admin/runtime/history", "")
	if r.status != 200 || field(r.list(), "event") != "loaded,loading,switch" || field(r.list(), "lane") != "main,main,main" ||
		!strings.Contains(field(r.list(), "detail"), "from beta, by root") {
		t.Errorf("history: %d %s", r.status, r.body)
	}
	if r := root.do("GET", "/api/admin/runtime/history?limit=1", ""); field(r.list(), "event") != "loaded" {
		t.Errorf("history limit=1: %s", r.body)
	}
	if r := root.do("GET", "/api/admin/runtime/history?before="+at.Add(time.Second).UTC().Format(time.RFC3339Nano), ""); field(r.list(), "event") != "loading,switch" {
		t.Errorf("history before: %s", r.body)
	}
	if r := root.do("GET", "/api/admin/runtime/history?before=yesterday", ""); r.status != 400 || r.param() != "before" {
		t.Errorf("history before=yesterday: %d %s", r.status, r.body)
	}
}
