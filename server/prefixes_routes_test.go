package server

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/people"
	"github.com/superfluid/superfluid/server/prefixes"
	"github.com/superfluid/superfluid/server/servertest"
	"github.com/superfluid/superfluid/server/store"
)

// TestSharedPrefixRoutes: an admin registers, lists and removes shared prefixes, each write in
// the audit log; a member is refused (403 admin_required); an empty or too long text is 400 and
// an unknown id 404.
func TestSharedPrefixRoutes(t *testing.T) {
	ctx := context.Background()
	st := servertest.Store(t)
	keys, err := auth.New(ctx, auth.Config{Store: st, Required: true})
	if err != nil {
		t.Fatal(err)
	}
	ppl := people.New(people.Config{Store: st, Keys: keys, Hash: people.HashParams{Memory: 64, Time: 1, Threads: 1}})
	for _, np := range []people.NewPerson{{Name: "root", Password: "password0", Role: people.RoleAdmin}, {Name: "bob", Password: "password1"}} {
		if _, err := ppl.Create(ctx, people.CLI, np); err != nil {
			t.Fatal(err)
		}
	}
	root, _, err := keys.Create(ctx, auth.NewKey{Name: "roots", Person: "root"})
	if err != nil {
		t.Fatal(err)
	}
	bob, _, err := keys.Create(ctx, auth.NewKey{Name: "bobs", Person: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	tmpl, _ := chat.Parse("")
	svc := core.New(core.Config{}, nil, &core.Model{ID: "fake", Path: "/m/fake.gguf", Engine: enginetest.New(64, "x"), Template: tmpl})
	shared := prefixes.New(prefixes.Config{Store: st})
	srv := httptest.NewServer(New(Config{Keys: keys, People: ppl, SharedPrefixes: shared}, svc))
	t.Cleanup(srv.Close)
	url := srv.URL + "/v1/admin/shared-prefixes"

	for _, method := range []string{"GET", "POST", "DELETE"} {
		path := url
		if method == "DELETE" {
			path += "/sp-1"
		}
		if status, body := call(t, method, path, bob, `{"text": "mine"}`); status != 403 || errorCode(body) != "admin_required" {
			t.Errorf("member %s: %d %v", method, status, body)
		}
	}
	for _, bad := range []string{`{"text": ""}`, `{"text": "   "}`, `{"text": "` + strings.Repeat("x", prefixes.MaxText+1) + `"}`, `{"txt": "typo"}`, `[1]`} {
		if status, body := call(t, "POST", url, root, bad); status != 400 {
			t.Errorf("POST %.40s: %d %v, want 400", bad, status, body)
		}
	}
	status, p := call(t, "POST", url, root, `{"text": "You are the team's assistant.", "name": "team", "model": "fake"}`)
	id, _ := p["id"].(string)
	if status != 201 || p["object"] != "shared_prefix" || p["text"] != "You are the team's assistant." || p["model"] != "fake" || p["created_by"] != "root" || id == "" {
		t.Fatalf("POST: %d %v", status, p)
	}
	if got := shared.SharedTexts(ctx, "fake"); len(got) != 1 {
		t.Errorf("the core's texts for fake after POST: %q", got)
	}
	status, list := call(t, "GET", url, root, "")
	if data, _ := list["data"].([]any); status != 200 || len(data) != 1 || data[0].(map[string]any)["id"] != id {
		t.Fatalf("GET: %d %v", status, list)
	}
	if status, body := call(t, "DELETE", url+"/sp-nope", root, ""); status != 404 || errorCode(body) != "shared_prefix_not_found" {
		t.Errorf("DELETE unknown: %d %v", status, body)
	}
	if status, body := call(t, "DELETE", url+"/"+id, root, ""); status != 200 || body["deleted"] != true || body["id"] != id {
		t.Fatalf("DELETE: %d %v", status, body)
	}
	entries, err := ppl.Audit(ctx, store.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, e := range entries {
		if strings.HasPrefix(e.Action, "shared_prefix.") {
			actions = append(actions, e.Action+" by "+e.ActorName)
		}
	}
	if want := "shared_prefix.remove by root,shared_prefix.add by root"; strings.Join(actions, ",") != want {
		t.Errorf("audited %v, want %s", actions, want)
	}
}
