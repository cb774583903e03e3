package web_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/superfluid/superfluid/server/storage/s3test"
	"github.com/superfluid/superfluid/server/store"
)

const routeSecret = "S3-secret-kEy-0123456789abcdefXYZ"

// replies keeps every reply body a test saw, to check a secret is in none.
type replies struct {
	mu   sync.Mutex
	seen [][]byte
}

func (rs *replies) keep(r reply) reply {
	rs.mu.Lock()
	rs.seen = append(rs.seen, r.body)
	rs.mu.Unlock()
	return r
}

func (rs *replies) mustNotContain(t *testing.T, secrets ...string) {
	t.Helper()
	for _, body := range rs.seen {
		for _, s := range secrets {
			if bytes.Contains(body, []byte(s)) {
				t.Errorf("a reply carries the secret %q: %s", s, body)
			}
		}
	}
}

func captureLog(t *testing.T) *bytes.Buffer {
	var logs bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() { slog.SetDefault(old) })
	return &logs
}

func TestStorageRoutes(t *testing.T) {
	logs := captureLog(t)
	tt := newTestTeam(t)
	s3 := s3test.Start(t, "AKIDWEB", routeSecret, "models")
	admin := tt.signIn(t, "root", "password0")
	var rs replies
	do := func(method, path, body string) reply { t.Helper(); return rs.keep(admin.do(method, path, body)) }

	dir := t.TempDir()
	local := do("POST", "/api/admin/storage", fmt.Sprintf(`{"name":"scratch","kind":"local","path":%q,"shared":true}`, dir))
	if local.status != 201 || local.obj["object"] != "storage" || local.obj["has_password"] != false {
		t.Fatalf("create local: %d %s", local.status, local.body)
	}
	bob, err := tt.People.Get(context.Background(), "bob")
	if err != nil {
		t.Fatal(err)
	}
	bucketBody := fmt.Sprintf(`{"name":"bucket","kind":"s3","endpoint":%q,"bucket":"models","region":"us-east-1","access_key":"AKIDWEB","password":%q,"people":[%q]}`,
		s3.URL, routeSecret, bob.ID)
	bucket := do("POST", "/api/admin/storage", bucketBody)
	if bucket.status != 201 || bucket.obj["has_password"] != true || bucket.obj["access_key"] != "AKIDWEB" {
		t.Fatalf("create s3: %d %s", bucket.status, bucket.body)
	}
	if _, ok := bucket.obj["password"]; ok {
		t.Errorf("the reply has a password field: %s", bucket.body)
	}
	bucketID := bucket.obj["id"].(string)

	if r := do("POST", "/api/admin/storage", bucketBody); r.status != 409 || r.code() != "storage_exists" {
		t.Errorf("a second storage named bucket: %d %s", r.status, r.body)
	}

	// The check proves access; usage counts what the bucket holds.
	if r := do("POST", "/api/admin/storage/"+bucketID+"/check", ""); r.status != 200 || r.obj["ok"] != true {
		t.Errorf("check: %d %s", r.status, r.body)
	}
	objs, err := tt.API.Storage().Open(context.Background(), bucketID)
	if err != nil {
		t.Fatal(err)
	}
	if err := objs.Put(context.Background(), "m/model.gguf", strings.NewReader("0123456789"), 10); err != nil {
		t.Fatal(err)
	}
	if r := do("GET", "/api/admin/storage/"+bucketID+"/usage", ""); r.status != 200 || r.obj["bytes"] != 10.0 || r.obj["objects"] != 1.0 {
		t.Errorf("usage: %d %s", r.status, r.body)
	}

	// A PUT without password keeps the secret (the check still passes); a wrong one fails the
	// check with the reason, and "" removes it.
	keep := strings.Replace(bucketBody, fmt.Sprintf(`,"password":%q`, routeSecret), "", 1)
	if r := do("PUT", "/api/admin/storage/"+bucketID, keep); r.status != 200 || r.obj["has_password"] != true {
		t.Errorf("PUT without password: %d %s", r.status, r.body)
	}
	if r := do("POST", "/api/admin/storage/"+bucketID+"/check", ""); r.obj["ok"] != true {
		t.Errorf("check after a PUT that kept the secret: %s", r.body)
	}
	wrong := strings.Replace(bucketBody, routeSecret, "Wrong-secret-value-777", 1)
	if r := do("PUT", "/api/admin/storage/"+bucketID, wrong); r.status != 200 {
		t.Errorf("PUT with another password: %d %s", r.status, r.body)
	}
	if r := do("POST", "/api/admin/storage/"+bucketID+"/check", ""); r.status != 200 || r.obj["ok"] != false ||
		!strings.Contains(r.obj["reason"].(string), "SignatureDoesNotMatch") {
		t.Errorf("check with a wrong secret: %d %s", r.status, r.body)
	}
	if r := do("GET", "/api/admin/storage/"+bucketID+"/usage", ""); r.status != 502 || r.code() != "storage_check_failed" {
		t.Errorf("usage with a wrong secret: %d %s", r.status, r.body)
	}
	clear := strings.Replace(bucketBody, routeSecret, "", 1)
	if r := do("PUT", "/api/admin/storage/"+bucketID, clear); r.status != 200 || r.obj["has_password"] != false {
		t.Errorf(`PUT with password "": %d %s`, r.status, r.body)
	}

	// Refusals.
	for _, c := range []struct{ method, path, body, status, code, param string }{
		{"POST", "/api/admin/storage", `{"name":"x","kind":"ftp","path":"/tmp"}`, "400", "invalid_body", "kind"},
		{"POST", "/api/admin/storage", `{"kind":"local","path":"/tmp"}`, "400", "invalid_body", "name"},
		{"POST", "/api/admin/storage", `{"name":"x","kind":"local","path":"rel/dir"}`, "400", "invalid_body", "path"},
		{"POST", "/api/admin/storage", `{"name":"x","kind":"s3","endpoint":"ftp://h","bucket":"b"}`, "400", "invalid_body", "endpoint"},
		{"POST", "/api/admin/storage", `{"name":"x","kind":"local","path":"/tmp","people":["nobody-here"]}`, "400", "invalid_body", "people"},
		{"PUT", "/api/admin/storage/storage-nope", `{"name":"x","kind":"local","path":"/tmp"}`, "404", "storage_not_found", ""},
		{"DELETE", "/api/admin/storage/storage-nope", "", "404", "storage_not_found", ""},
		{"POST", "/api/admin/storage/storage-nope/check", "", "404", "storage_not_found", ""},
		{"GET", "/api/admin/storage/storage-nope/usage", "", "404", "storage_not_found", ""},
	} {
		r := do(c.method, c.path, c.body)
		if fmt.Sprint(r.status) != c.status || r.code() != c.code || r.param() != c.param {
			t.Errorf("%s %s %s: %d %s, want %s %s param %q", c.method, c.path, c.body, r.status, r.body, c.status, c.code, c.param)
		}
	}

	// People may be named; the storage keeps their ids.
	byName := do("POST", "/api/admin/storage", fmt.Sprintf(`{"name":"named","kind":"local","path":%q,"people":["bob"]}`, dir))
	if byName.status != 201 || fmt.Sprint(byName.obj["people"]) != "["+bob.ID+"]" {
		t.Errorf("a storage for bob by name: %d %s", byName.status, byName.body)
	}
	if r := do("DELETE", "/api/admin/storage/"+byName.obj["id"].(string), ""); r.status != 204 {
		t.Errorf("delete: %d %s", r.status, r.body)
	}

	// A member sees the shared storage and the one listing them, without its access key; the
	// admin routes are not theirs.
	member := tt.signIn(t, "bob", "password1")
	mine := rs.keep(member.do("GET", "/api/storage", ""))
	data, _ := mine.obj["data"].([]any)
	if mine.status != 200 || len(data) != 2 {
		t.Fatalf("bob's storages: %d %s", mine.status, mine.body)
	}
	for _, d := range data {
		if d.(map[string]any)["access_key"] != "" {
			t.Errorf("a member sees an access key: %v", d)
		}
	}
	if r := rs.keep(member.do("GET", "/api/admin/storage", "")); r.status != 403 || r.code() != "admin_required" {
		t.Errorf("a member listing every storage: %d %s", r.status, r.body)
	}
	if r := rs.keep(tt.withKey(t, tt.BobKey, "POST", "/api/admin/storage", `{"name":"y","kind":"local","path":"/tmp"}`)); r.status != 403 {
		t.Errorf("a member's key creating a storage: %d %s", r.status, r.body)
	}
	// An admin's key (a script) works without a CSRF token.
	if r := rs.keep(tt.withKey(t, tt.RootKey, "GET", "/api/admin/storage", "")); r.status != 200 || len(r.obj["data"].([]any)) != 2 {
		t.Errorf("the admin's key listing: %d %s", r.status, r.body)
	}

	if r := do("DELETE", "/api/admin/storage/"+bucketID, ""); r.status != 204 {
		t.Errorf("delete: %d %s", r.status, r.body)
	}
	if r := rs.keep(member.do("GET", "/api/storage", "")); len(r.obj["data"].([]any)) != 1 {
		t.Errorf("after the delete bob has %s", r.body)
	}

	// Every write is audited, and no audit entry, reply or log line holds a secret.
	entries, err := tt.People.Audit(context.Background(), store.AuditQuery{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	actions := map[string]int{}
	for _, e := range entries {
		actions[e.Action]++
		if bytes.Contains(e.Detail, []byte(routeSecret)) || bytes.Contains(e.Detail, []byte("Wrong-secret")) {
			t.Errorf("audit entry %s carries a secret: %s", e.Action, e.Detail)
		}
	}
	if actions["storage.create"] != 3 || actions["storage.update"] != 3 || actions["storage.delete"] != 2 {
		t.Errorf("audit actions = %v, want 3 creates, 3 updates, 2 deletes", actions)
	}
	rs.mustNotContain(t, routeSecret, "Wrong-secret-value-777")
	if strings.Contains(logs.String(), routeSecret) || strings.Contains(logs.String(), "Wrong-secret-value") {
		t.Errorf("the log carries a secret:\n%s", logs.String())
	}
}

func startS3(t *testing.T) *s3test.Server { return s3test.Start(t, "AKIDWEB", routeSecret, "models") }
