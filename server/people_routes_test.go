package server

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/people"
	"github.com/superfluid/superfluid/server/servertest"
)

// teamServer is a server in team mode over real SQLite: the admin "root" with key rootKey and
// the member "bob" with key bobKey.
func teamServer(t *testing.T) (url, rootKey, bobKey string, ppl *people.Service) {
	t.Helper()
	ctx := context.Background()
	st := servertest.Store(t)
	keys, err := auth.New(ctx, auth.Config{Store: st, Required: true})
	if err != nil {
		t.Fatal(err)
	}
	ppl = people.New(people.Config{Store: st, Keys: keys, Hash: people.HashParams{Memory: 64, Time: 1, Threads: 1}})
	for _, np := range []people.NewPerson{{Name: "root", Password: "password0", Role: people.RoleAdmin}, {Name: "bob", Password: "password1"}} {
		if _, err := ppl.Create(ctx, people.CLI, np); err != nil {
			t.Fatal(err)
		}
	}
	if rootKey, _, err = keys.Create(ctx, auth.NewKey{Name: "roots", Person: "root"}); err != nil {
		t.Fatal(err)
	}
	if bobKey, _, err = keys.Create(ctx, auth.NewKey{Name: "bobs", Person: "bob"}); err != nil {
		t.Fatal(err)
	}
	tmpl, _ := chat.Parse("")
	svc := core.New(core.Config{}, nil, &core.Model{ID: "fake", Path: "/m/fake.gguf", Engine: enginetest.New(64, "x"), Template: tmpl})
	srv := httptest.NewServer(New(Config{Keys: keys, People: ppl}, svc))
	t.Cleanup(srv.Close)
	return srv.URL, rootKey, bobKey, ppl
}

// call sends a request with key and returns the status and the decoded body.
func call(t *testing.T, method, url, key, body string) (int, map[string]any) {
	t.Helper()
	res, data := servertest.Do(t, method, url, body, "Authorization", "Bearer "+key)
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("%s %s: %d %q", method, url, res.StatusCode, data)
	}
	return res.StatusCode, out
}

func errorCode(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	code, _ := e["code"].(string)
	return code
}

// TestAdminUsersRoutes: the admin API over real HTTP: creating people and their keys, the bad
// input, a member refused, a disabled person's key refused at once, the audit log.
func TestAdminUsersRoutes(t *testing.T) {
	url, root, bob, _ := teamServer(t)
	for _, route := range [][2]string{{"GET", "/v1/admin/users"}, {"POST", "/v1/admin/users"}, {"PATCH", "/v1/admin/users/bob"},
		{"GET", "/v1/admin/audit"}, {"GET", "/v1/admin/keys"}, {"POST", "/v1/admin/keys"}} {
		if status, body := call(t, route[0], url+route[1], bob, `{"name": "x"}`); status != 403 || errorCode(body) != "admin_required" {
			t.Errorf("member %s %s: %d %v", route[0], route[1], status, body)
		}
	}
	status, carol := call(t, "POST", url+"/v1/admin/users", root, `{"name": "carol"}`)
	pw, _ := carol["password"].(string)
	if status != 201 || carol["object"] != "user" || carol["role"] != "member" || carol["state"] != "active" || len(pw) != 24 {
		t.Fatalf("create carol: %d %v", status, carol)
	}
	bad := []struct {
		method, path, body string
		status             int
		code               string
	}{
		{"POST", "/v1/admin/users", `{"name": "CAROL", "password": "password2"}`, 409, "user_exists"},
		{"POST", "/v1/admin/users", `{"name": "dave", "password": ""}`, 400, ""},
		{"POST", "/v1/admin/users", `{"name": "dave", "password": "short"}`, 400, ""},
		{"POST", "/v1/admin/users", `{"name": "dave", "password": "password2", "role": "owner"}`, 400, ""},
		{"POST", "/v1/admin/users", `{"name": "dave", "admin": true}`, 400, ""},
		{"PATCH", "/v1/admin/users/carol", `{"state": "gone"}`, 400, ""},
		{"PATCH", "/v1/admin/users/carol", `{"role": "owner"}`, 400, ""},
		{"PATCH", "/v1/admin/users/nobody", `{"state": "disabled"}`, 404, "user_not_found"},
		{"PATCH", "/v1/admin/users/root", `{"state": "disabled"}`, 409, "last_admin"},
		{"POST", "/v1/admin/keys", `{"name": "k", "user": "nobody"}`, 400, ""},
		{"GET", "/v1/admin/audit?limit=x", "", 400, ""},
	}
	for _, c := range bad {
		if status, body := call(t, c.method, url+c.path, root, c.body); status != c.status || errorCode(body) != c.code {
			t.Errorf("%s %s %s: %d %v", c.method, c.path, c.body, status, body)
		}
	}
	status, key := call(t, "POST", url+"/v1/admin/keys", root, `{"name": "carols", "user": "carol"}`)
	carolKey, _ := key["key"].(string)
	user, _ := key["user"].(map[string]any)
	if status != 201 || !strings.HasPrefix(carolKey, auth.PersonKeyPrefix) || user["name"] != "carol" || key["admin"] != false {
		t.Fatalf("carol's key: %d %v", status, key)
	}
	if status, body := call(t, "GET", url+"/v1/models", carolKey, ""); status != 200 {
		t.Fatalf("carol's key before: %d %v", status, body)
	}
	if status, body := call(t, "PATCH", url+"/v1/admin/users/carol", root, `{"state": "disabled"}`); status != 200 || body["state"] != "disabled" {
		t.Fatalf("disable carol: %d %v", status, body)
	}
	if status, body := call(t, "GET", url+"/v1/models", carolKey, ""); status != 401 || errorCode(body) != "invalid_api_key" {
		t.Fatalf("a disabled person's key: %d %v", status, body)
	}
	status, list := call(t, "GET", url+"/v1/admin/keys", root, "")
	if data, _ := list["data"].([]any); status != 200 || len(data) != 3 {
		t.Fatalf("keys: %d %v", status, list)
	}
	status, users := call(t, "GET", url+"/v1/admin/users", root, "")
	if data, _ := users["data"].([]any); status != 200 || len(data) != 3 || strings.Contains(strings.ToLower(string(mustJSON(users))), "argon2") {
		t.Fatalf("users: %d %v", status, users)
	}
	status, audit := call(t, "GET", url+"/v1/admin/audit", root, "")
	data, _ := audit["data"].([]any)
	var actions []string
	for _, e := range data {
		m := e.(map[string]any)
		actions = append(actions, m["action"].(string))
	}
	if status != 200 || strings.Join(actions, " ") != "user.disable key.create user.create user.create user.create" {
		t.Fatalf("audit: %d %v", status, actions)
	}
	first := data[0].(map[string]any)
	if a := first["actor"].(map[string]any); a["user"] != "root" || a["key"] != "roots" || first["target"] != "carol" {
		t.Fatalf("audit entry: %v", first)
	}
	if status, page := call(t, "GET", url+"/v1/admin/audit?limit=1&action=user.create", root, ""); status != 200 || len(page["data"].([]any)) != 1 {
		t.Fatalf("audit page: %d %v", status, page)
	}
	// /v1/keys is audited too in team mode.
	if status, body := call(t, "POST", url+"/v1/keys", root, `{"name": "spare"}`); status != 201 || !strings.HasPrefix(body["key"].(string), auth.KeyPrefix) {
		t.Fatalf("POST /v1/keys: %d %v", status, body)
	}
	if status, body := call(t, "DELETE", url+"/v1/admin/keys/spare", root, ""); status != 200 || body["deleted"] != true {
		t.Fatalf("DELETE /v1/admin/keys/spare: %d %v", status, body)
	}
	if status, page := call(t, "GET", url+"/v1/admin/audit?limit=2", root, ""); status != 200 ||
		page["data"].([]any)[0].(map[string]any)["action"] != "key.revoke" || page["data"].([]any)[1].(map[string]any)["action"] != "key.create" {
		t.Fatalf("keys audited: %d %v", status, page)
	}
	if strings.Contains(string(mustJSON(audit)), pw) {
		t.Fatal("the audit log holds a password")
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// TestAdminRoutesOnlyInTeamMode: without People the admin API does not exist.
func TestAdminRoutesOnlyInTeamMode(t *testing.T) {
	tmpl, _ := chat.Parse("")
	svc := core.New(core.Config{}, nil, &core.Model{ID: "fake", Path: "/m/fake.gguf", Engine: enginetest.New(64, "x"), Template: tmpl})
	srv := httptest.NewServer(New(Config{}, svc))
	defer srv.Close()
	if res, _ := servertest.Do(t, "GET", srv.URL+"/v1/admin/users", ""); res.StatusCode != 404 {
		t.Fatalf("single-user mode: %d", res.StatusCode)
	}
}

// TestTeamKeyErrors: team mode answers the spec's 401 codes: missing_api_key without a key,
// invalid_api_key for an unknown one (in OpenAI's shape, on an OpenAI route).
func TestTeamKeyErrors(t *testing.T) {
	url, _, _, _ := teamServer(t)
	if status, body := call(t, "GET", url+"/v1/models", "", ""); status != 401 || errorCode(body) != "missing_api_key" {
		t.Errorf("no key: %d %v", status, body)
	}
	if status, body := call(t, "GET", url+"/v1/models", "sk-ss-"+strings.Repeat("0", 48), ""); status != 401 || errorCode(body) != "invalid_api_key" {
		t.Errorf("an unknown key: %d %v", status, body)
	}
}
