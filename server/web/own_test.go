package web_test

import (
	"context"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/people"
)

// TestOwnKeys: a key made from the browser is shown once, belongs to the signed-in person,
// works on the API at once; the list holds one's own keys only; another's key cannot be
// revoked (404, as if it did not exist); one's own can, and stops working.
func TestOwnKeys(t *testing.T) {
	tt := newTestTeam(t)
	bob := tt.signIn(t, "bob", "password1")
	r := bob.do("POST", "/api/keys", `{"name": "laptop", "models": ["alpha"]}`)
	key, _ := r.obj["key"].(string)
	user, _ := r.obj["user"].(map[string]any)
	if r.status != 201 || !strings.HasPrefix(key, "sk-ss-") || user["name"] != "bob" {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	if got := tt.withKey(t, key, "GET", "/api/tags", ""); got.status != 200 {
		t.Fatalf("the new key on Ollama's /api/tags: %d %s", got.status, got.body)
	}
	list := bob.do("GET", "/api/keys", "")
	data, _ := list.obj["data"].([]any)
	names := []string{}
	for _, d := range data {
		k := d.(map[string]any)
		names = append(names, k["name"].(string))
		if k["key"] != nil {
			t.Errorf("a listed key shows itself: %v", k)
		}
	}
	if strings.Join(names, ",") != "bobs,laptop" {
		t.Fatalf("bob's keys: %v (%s)", names, list.body)
	}
	root := tt.signIn(t, "root", "password0")
	if r := root.do("DELETE", "/api/keys/laptop", ""); r.status != 404 || r.code() != "key_not_found" {
		t.Fatalf("root revokes bob's key from own keys: %d %s", r.status, r.body)
	}
	if r := bob.do("DELETE", "/api/keys/roots", ""); r.status != 404 || r.code() != "key_not_found" {
		t.Fatalf("bob revokes root's key: %d %s", r.status, r.body)
	}
	if r := bob.do("DELETE", "/api/keys/laptop", ""); r.status != 200 || r.obj["deleted"] != true {
		t.Fatalf("revoke: %d %s", r.status, r.body)
	}
	if got := tt.withKey(t, key, "GET", "/api/tags", ""); got.status != 401 {
		t.Fatalf("the revoked key: %d %s", got.status, got.body)
	}
	entries, err := tt.People.Audit(context.Background(), storeAuditAll())
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, e := range entries {
		if e.Target == "laptop" {
			actions = append(actions, e.Action+" by "+e.ActorName)
		}
	}
	if strings.Join(actions, ";") != "key.revoke by bob;key.create by bob" {
		t.Fatalf("audit: %v", actions)
	}
}

// TestOwnBookings: a person books a lane from the browser, sees only their own bookings, and
// cancels only their own (an admin too: another's is 404 here; /api/admin is the admin's way).
func TestOwnBookings(t *testing.T) {
	tt := newTestTeam(t)
	bob := tt.signIn(t, "bob", "password1")
	root := tt.signIn(t, "root", "password0")
	r := bob.do("POST", "/api/bookings", `{"lane": "main", "start": "now", "end": "+2h"}`)
	id, _ := r.obj["id"].(string)
	if r.status != 201 || r.obj["person"] != "bob" || r.obj["state"] != "approved" {
		t.Fatalf("book: %d %s", r.status, r.body)
	}
	if r := root.do("POST", "/api/bookings", `{"lane": "main", "start": "+1h", "end": "+3h"}`); r.status != 409 {
		t.Fatalf("an overlapping booking: %d %s", r.status, r.body)
	}
	if r := bob.do("POST", "/api/bookings", `{"lane": "main", "start": "+3h", "end": "someday"}`); r.status != 400 || r.param() != "end" {
		t.Fatalf("a bad end: %d %s", r.status, r.body)
	}
	if r := root.do("GET", "/api/bookings", ""); r.status != 200 || len(r.obj["data"].([]any)) != 0 {
		t.Fatalf("root's own bookings: %d %s", r.status, r.body)
	}
	lanes := bob.do("GET", "/api/lanes", "")
	data, _ := lanes.obj["data"].([]any)
	if lanes.status != 200 || len(data) != 1 {
		t.Fatalf("lanes: %d %s", lanes.status, lanes.body)
	}
	lane := data[0].(map[string]any)
	held, _ := lane["booking"].(map[string]any)
	if lane["name"] != "main" || lane["model"] != "alpha" || lane["state"] != "serving" || held["person"] != "bob" || held["id"] != id {
		t.Fatalf("the lane and its holder: %s", lanes.body)
	}
	if r := root.do("POST", "/api/bookings/"+id+"/cancel", ""); r.status != 404 || r.code() != "booking_not_found" {
		t.Fatalf("root cancels bob's booking from own bookings: %d %s", r.status, r.body)
	}
	if r := bob.do("POST", "/api/bookings/"+id+"/cancel", ""); r.status != 200 || r.obj["state"] == "approved" {
		t.Fatalf("cancel: %d %s", r.status, r.body)
	}
}

// TestPasswordChange: the current password is checked; the change ends the person's other
// sessions and gives this one a new id; the new password signs in, the old one not.
func TestPasswordChange(t *testing.T) {
	tt := newTestTeam(t)
	here := tt.signIn(t, "bob", "password1")
	elsewhere := tt.signIn(t, "bob", "password1")
	if r := here.do("PUT", "/api/profile/password", `{"current_password": "nope", "new_password": "password9"}`); r.status != 400 || r.param() != "current_password" {
		t.Fatalf("wrong current password: %d %s", r.status, r.body)
	}
	old := here.cookie
	if r := here.do("PUT", "/api/profile/password", `{"current_password": "password1", "new_password": "password9"}`); r.status != 204 || here.cookie == old || here.cookie == "" {
		t.Fatalf("change: %d %s", r.status, r.body)
	}
	if r := elsewhere.do("GET", "/api/auth/me", ""); r.status != 401 {
		t.Fatalf("the other session: %d %s", r.status, r.body)
	}
	replay := tt.browser(t)
	replay.cookie = old
	if r := replay.do("GET", "/api/auth/me", ""); r.status != 401 {
		t.Fatalf("this session's old id: %d %s", r.status, r.body)
	}
	if r := here.do("GET", "/api/profile", ""); r.status != 200 || r.obj["name"] != "bob" {
		t.Fatalf("this session, new id: %d %s", r.status, r.body)
	}
	if r := login(t, tt, "bob", "password1", "10.0.4.1"); r.status != 401 {
		t.Fatalf("the old password: %d %s", r.status, r.body)
	}
	if r := login(t, tt, "bob", "password9", "10.0.4.1"); r.status != 200 {
		t.Fatalf("the new password: %d %s", r.status, r.body)
	}
	p, err := tt.People.Get(context.Background(), "bob")
	if err != nil || p.State != people.StateActive {
		t.Fatal(p, err)
	}
}

// TestOwnUsage: a person's usage is their own, an admin's too (not everyone's).
func TestOwnUsage(t *testing.T) {
	tt := newTestTeam(t)
	for _, key := range []string{tt.BobKey, tt.BobKey, tt.RootKey} {
		if r := tt.withKey(t, key, "POST", "/v1/chat/completions", `{"model": "alpha", "messages": [{"role": "user", "content": "hi"}]}`); r.status != 200 {
			t.Fatalf("chat: %d %s", r.status, r.body)
		}
	}
	if err := tt.Store.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	requests := func(b *browser) int64 {
		r := b.do("GET", "/api/usage?group_by=none", "")
		data, _ := r.obj["data"].([]any)
		if r.status != 200 || len(data) != 1 {
			t.Fatalf("usage: %d %s", r.status, r.body)
		}
		return int64(data[0].(map[string]any)["requests"].(float64))
	}
	if n := requests(tt.signIn(t, "bob", "password1")); n != 2 {
		t.Errorf("bob's requests: %d", n)
	}
	if n := requests(tt.signIn(t, "root", "password0")); n != 1 {
		t.Errorf("root's own requests: %d", n)
	}
	if r := tt.signIn(t, "bob", "password1").do("GET", "/api/usage?from=yesterday", ""); r.status != 400 || r.param() != "from" {
		t.Errorf("a bad date: %d %s", r.status, r.body)
	}
}

// TestKeyOfNobody: an admin key that belongs to no person may read what is everyone's and use
// the admin routes, but has no own things (403 person_required).
func TestKeyOfNobody(t *testing.T) {
	tt := newTestTeam(t)
	key, _, err := tt.Keys.Create(context.Background(), auth.NewKey{Name: "ops", Admin: true})
	if err != nil {
		t.Fatal(err)
	}
	if r := tt.withKey(t, key, "GET", "/api/lanes", ""); r.status != 200 {
		t.Fatalf("lanes: %d %s", r.status, r.body)
	}
	for _, c := range []struct{ method, path, body string }{{"GET", "/api/auth/me", ""}, {"GET", "/api/profile", ""}, {"GET", "/api/keys", ""},
		{"POST", "/api/keys", `{"name": "x"}`}, {"POST", "/api/bookings", `{"lane": "main", "start": "now", "end": "+1h"}`}} {
		if r := tt.withKey(t, key, c.method, c.path, c.body); r.status != 403 || r.code() != "person_required" {
			t.Errorf("%s %s: %d %s", c.method, c.path, r.status, r.body)
		}
	}
}
