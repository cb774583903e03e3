package web_test

import (
	"strings"
	"testing"
	"time"

	"github.com/superfluid/superfluid/server/bookings"
	"github.com/superfluid/superfluid/server/core/qos"
	"github.com/superfluid/superfluid/server/web"
)

func TestAdminSettings(t *testing.T) {
	tt := newAdminTeam(t)
	tt.Bookings.SetPolicy(bookings.Policy{MaxLength: 4 * time.Hour})
	root := tt.signIn(t, "root", "password0")
	r := root.do("GET", "/api/admin/settings", "")
	if r.status != 200 || r.obj["approval_required"] != false || r.obj["max_booking_hours"] != 4.0 || r.obj["hours_per_week"] != 0.0 || r.obj["default_qos"] != "" {
		t.Fatalf("get: %d %s", r.status, r.body)
	}
	r = root.do("PUT", "/api/admin/settings", `{"approval_required": true, "hours_per_week": 10.5, "default_qos": "agent"}`)
	if r.status != 200 || r.obj["approval_required"] != true || r.obj["max_booking_hours"] != 4.0 || r.obj["hours_per_week"] != 10.5 || r.obj["default_qos"] != "agent" {
		t.Fatalf("put: %d %s", r.status, r.body)
	}
	if p := tt.Bookings.Policy(); !p.NeedsApproval || p.MaxLength != 4*time.Hour || p.MaxHoursPerWeek != 10.5 {
		t.Errorf("policy in force = %+v", p)
	}
	if r := root.do("GET", "/api/admin/settings", ""); r.obj["default_qos"] != "agent" || r.obj["approval_required"] != true {
		t.Errorf("get after put: %s", r.body)
	}
	// The router reads the class from the API (server.Config.DefaultQoS); a restart reads it
	// back from the store.
	if got := tt.API.DefaultQoS(); got != qos.Agent {
		t.Errorf("DefaultQoS = %v, want agent", got)
	}
	if got := web.New(web.Config{People: tt.People, Keys: tt.Keys, Store: tt.Store, Sessions: tt.Sessions}).DefaultQoS(); got != qos.Agent {
		t.Errorf("DefaultQoS after a restart = %v, want agent", got)
	}
	// The new policy applies to the next booking: a member's now waits for approval.
	if r := tt.withKey(t, tt.BobKey, "POST", "/v1/bookings", `{"lane": "main", "start": "+1h", "end": "+2h"}`); r.status != 201 || r.obj["state"] != "pending" {
		t.Errorf("a booking under the new policy: %d %s", r.status, r.body)
	}
	r = root.do("GET", "/api/admin/audit?action=settings.update", "")
	if len(r.list()) != 1 || !strings.Contains(string(r.body), `"default_qos":{"from":"","to":"agent"}`) || strings.Contains(string(r.body), "max_booking_hours") {
		t.Errorf("audit: %s", r.body)
	}
	for _, tc := range []struct{ body, param string }{
		{`{"default_qos": "fast"}`, "default_qos"},
		{`{"hours_per_week": -1}`, "hours_per_week"},
		{`{"hours_per_week": 200}`, "hours_per_week"},
		{`{"max_booking_hours": "4h"}`, "max_booking_hours"},
		{`{"approval_required": "yes"}`, "approval_required"},
	} {
		if r := root.do("PUT", "/api/admin/settings", tc.body); r.status != 400 || r.code() != "invalid_body" || r.param() != tc.param {
			t.Errorf("put %s: %d %s, want 400 invalid_body param %s", tc.body, r.status, r.body, tc.param)
		}
	}
	if r := root.do("PUT", "/api/admin/settings", `{}`); r.status != 200 {
		t.Errorf("an empty change: %d %s", r.status, r.body)
	}
	if r := root.do("GET", "/api/admin/audit?action=settings.update", ""); len(r.list()) != 1 {
		t.Errorf("a change of nothing was audited: %s", r.body)
	}
}
