package web_test

import (
	"strings"
	"testing"
)

// TestAdminRoutesRefuseMembers: every admin route in the document answers a member's session
// and a member's key with 403 admin_required, and no caller with 401 not_signed_in.
func TestAdminRoutesRefuseMembers(t *testing.T) {
	tt := newAdminTeam(t)
	routes := adminPaths(t, tt.testTeam)
	if len(routes) < 25 {
		t.Fatalf("the document lists %d admin routes, want every one of part B's (25 or more): %v", len(routes), routes)
	}
	bob := tt.signIn(t, "bob", "password1")
	anon := tt.browser(t)
	for _, rt := range routes {
		method, path := rt[0], rt[1]
		body := ""
		if method != "GET" && method != "DELETE" {
			body = "{}"
		}
		if r := bob.do(method, path, body); r.status != 403 || r.code() != "admin_required" {
			t.Errorf("member session %s %s: %d %s, want 403 admin_required", method, path, r.status, r.body)
		}
		if r := tt.withKey(t, tt.BobKey, method, path, body); r.status != 403 || r.code() != "admin_required" {
			t.Errorf("member key %s %s: %d %s, want 403 admin_required", method, path, r.status, r.body)
		}
		if r := anon.do(method, path, body); r.status != 401 || r.code() != "not_signed_in" {
			t.Errorf("nobody %s %s: %d %s, want 401 not_signed_in", method, path, r.status, r.body)
		}
	}
}

// TestAdminUsers: create (a generated password shown once), list, change, disable (the
// person's sessions end), the refusals, and the audit log of it all.
func TestAdminUsers(t *testing.T) {
	tt := newAdminTeam(t)
	root := tt.signIn(t, "root", "password0")
	r := root.do("POST", "/api/admin/users", `{"name": "carol"}`)
	if r.status != 201 || r.obj["name"] != "carol" || r.obj["role"] != "member" || len(r.obj["password"].(string)) < 8 {
		t.Fatalf("create carol: %d %s", r.status, r.body)
	}
	password := r.obj["password"].(string)
	carol := tt.signIn(t, "carol", password)
	if r := root.do("GET", "/api/admin/users", ""); r.status != 200 || field(r.list(), "name") != "root,bob,carol" || strings.Contains(string(r.body), "password") {
		t.Errorf("list: %d %s", r.status, r.body)
	}
	for _, tc := range []struct {
		method, path, body string
		status             int
		code, param        string
	}{
		{"POST", "/api/admin/users", `{"name": "carol", "password": "password9"}`, 409, "user_exists", "name"},
		{"POST", "/api/admin/users", `{"password": "password9"}`, 400, "invalid_body", "name"},
		{"POST", "/api/admin/users", `{"name": "dan", "role": "owner"}`, 400, "invalid_body", "role"},
		{"PATCH", "/api/admin/users/nobody", `{"role": "admin"}`, 404, "user_not_found", ""},
		{"PATCH", "/api/admin/users/carol", `{"state": "gone"}`, 400, "invalid_body", "state"},
		{"PATCH", "/api/admin/users/carol", `{"daily_tokens": -1}`, 400, "invalid_body", "daily_tokens"},
		{"PATCH", "/api/admin/users/carol", `{"monthly_tokens": 1.5}`, 400, "invalid_body", "monthly_tokens"},
		{"PATCH", "/api/admin/users/root", `{"role": "member"}`, 409, "last_admin", ""},
	} {
		if r := root.do(tc.method, tc.path, tc.body); r.status != tc.status || r.code() != tc.code || r.param() != tc.param {
			t.Errorf("%s %s %s: %d %s, want %d %s param %q", tc.method, tc.path, tc.body, r.status, r.body, tc.status, tc.code, tc.param)
		}
	}
	r = root.do("PATCH", "/api/admin/users/carol", `{"daily_tokens": 5000, "monthly_tokens": null}`)
	if r.status != 200 || r.obj["daily_tokens"] != 5000.0 || r.obj["monthly_tokens"] != nil {
		t.Errorf("quota: %d %s", r.status, r.body)
	}
	if r := carol.do("GET", "/api/auth/me", ""); r.status != 200 {
		t.Fatalf("carol before disable: %d %s", r.status, r.body)
	}
	if r := root.do("PATCH", "/api/admin/users/carol", `{"state": "disabled"}`); r.status != 200 || r.obj["state"] != "disabled" {
		t.Fatalf("disable: %d %s", r.status, r.body)
	}
	if r := carol.do("GET", "/api/auth/me", ""); r.status != 401 {
		t.Errorf("carol's session after disable: %d %s, want 401", r.status, r.body)
	}
	r = root.do("GET", "/api/admin/audit?limit=10", "")
	actions := field(r.list(), "action")
	for _, want := range []string{"user.create", "user.quota", "user.disable"} {
		if !strings.Contains(actions, want) {
			t.Errorf("audit %s lacks %s", actions, want)
		}
	}
	if e := r.list()[0]; e["actor"].(map[string]any)["user"] != "root" {
		t.Errorf("audit entry by %v, want root", e["actor"])
	}
	if r := root.do("GET", "/api/admin/audit?action=user.create&limit=1", ""); len(r.list()) != 1 || field(r.list(), "target") != "carol" {
		t.Errorf("audit by action: %s", r.body)
	}
	if r := root.do("GET", "/api/admin/audit?limit=0", ""); r.status != 400 || r.param() != "limit" {
		t.Errorf("audit limit=0: %d %s", r.status, r.body)
	}
}

// TestAdminKeys: a key for a person, shown once; quotas; revoke; the refusals.
func TestAdminKeys(t *testing.T) {
	tt := newAdminTeam(t)
	root := tt.signIn(t, "root", "password0")
	r := root.do("POST", "/api/admin/keys", `{"name": "bobs-2", "user": "bob", "rpm": 60, "qos": "agent"}`)
	key, _ := r.obj["key"].(string)
	if r.status != 201 || !strings.HasPrefix(key, "sk-") || r.obj["user"].(map[string]any)["name"] != "bob" || r.obj["qos"] != "agent" {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	id := r.obj["id"].(string)
	if r := tt.withKey(t, key, "GET", "/api/auth/me", ""); r.status != 200 || r.obj["user"].(map[string]any)["name"] != "bob" {
		t.Errorf("the new key: %d %s", r.status, r.body)
	}
	if r := root.do("GET", "/api/admin/keys", ""); r.status != 200 || !strings.Contains(field(r.list(), "name"), "bobs-2") || strings.Contains(string(r.body), key) {
		t.Errorf("list: %d %s", r.status, r.body)
	}
	if r := root.do("PATCH", "/api/admin/keys/bobs-2", `{"daily_tokens": 100}`); r.status != 200 || r.obj["daily_tokens"] != 100.0 || r.obj["key"] != nil {
		t.Errorf("quota: %d %s", r.status, r.body)
	}
	for _, tc := range []struct {
		method, path, body string
		status             int
		code, param        string
	}{
		{"POST", "/api/admin/keys", `{"name": "bobs-2", "user": "bob"}`, 409, "key_exists", "name"},
		{"POST", "/api/admin/keys", `{"name": "k", "qos": "urgent"}`, 400, "invalid_body", "qos"},
		{"POST", "/api/admin/keys", `{"name": "k", "rpm": -1}`, 400, "invalid_body", "rpm"},
		{"POST", "/api/admin/keys", `{"name": "k", "user": "nobody"}`, 400, "invalid_value", ""},
		{"PATCH", "/api/admin/keys/nope", `{"daily_tokens": 1}`, 404, "key_not_found", ""},
		{"DELETE", "/api/admin/keys/nope", "", 404, "key_not_found", ""},
	} {
		if r := root.do(tc.method, tc.path, tc.body); r.status != tc.status || r.code() != tc.code || r.param() != tc.param {
			t.Errorf("%s %s %s: %d %s, want %d %s param %q", tc.method, tc.path, tc.body, r.status, r.body, tc.status, tc.code, tc.param)
		}
	}
	if r := root.do("DELETE", "/api/admin/keys/"+id, ""); r.status != 200 || r.obj["deleted"] != true {
		t.Fatalf("revoke: %d %s", r.status, r.body)
	}
	if r := tt.withKey(t, key, "GET", "/api/auth/me", ""); r.status != 401 {
		t.Errorf("the revoked key: %d %s, want 401", r.status, r.body)
	}
	if r := root.do("GET", "/api/admin/audit?limit=5", ""); !strings.Contains(field(r.list(), "action"), "key.revoke") || !strings.Contains(field(r.list(), "action"), "key.create") {
		t.Errorf("audit: %s", r.body)
	}
}
