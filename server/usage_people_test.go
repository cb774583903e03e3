package server

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/people"
	"github.com/superfluid/superfluid/server/servertest"
)

// TestUsageByPerson: in team mode every request record names the person whose key made it;
// /v1/usage?group_by=person sums each person's keys together for an admin, and a member sees
// their own person's usage (all their keys) and nobody else's.
func TestUsageByPerson(t *testing.T) {
	ctx := context.Background()
	st := servertest.Store(t)
	keys, err := auth.New(ctx, auth.Config{Store: st, Required: true})
	if err != nil {
		t.Fatal(err)
	}
	ppl := people.New(people.Config{Store: st, Keys: keys, Hash: people.HashParams{Memory: 64, Time: 1, Threads: 1}})
	for _, np := range []people.NewPerson{{Name: "root", Password: "password0", Role: people.RoleAdmin},
		{Name: "alice", Password: "password1"}, {Name: "bob", Password: "password2"}} {
		if _, err := ppl.Create(ctx, people.CLI, np); err != nil {
			t.Fatal(err)
		}
	}
	key := func(name, person string) string {
		k, _, err := keys.Create(ctx, auth.NewKey{Name: name, Person: person})
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	root, alice1, alice2, bob := key("roots", "root"), key("alice-laptop", "alice"), key("alice-ci", "alice"), key("bobs", "bob")
	tmpl, _ := chat.Parse("")
	svc := core.New(core.Config{}, st, &core.Model{ID: "fake", Path: "/m/fake.gguf", Engine: enginetest.New(64, "x"), Template: tmpl})
	srv := httptest.NewServer(New(Config{Keys: keys, People: ppl}, svc))
	t.Cleanup(srv.Close)
	for _, k := range []string{alice1, alice2, alice2, bob} {
		resp, body := servertest.Do(t, "POST", srv.URL+"/v1/chat/completions", `{"model": "fake", "max_tokens": 3, "messages": [{"role": "user", "content": "hi"}]}`,
			"Authorization", "Bearer "+k)
		if resp.StatusCode != 200 {
			t.Fatalf("chat: %d %s", resp.StatusCode, body)
		}
	}
	if err := st.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	usage := func(k string) map[string]int64 {
		resp, body := servertest.Do(t, "GET", srv.URL+"/v1/usage?group_by=person", "", "Authorization", "Bearer "+k)
		var v struct {
			Data []struct {
				PersonName *string `json:"person_name"`
				Requests   int64   `json:"requests"`
				Completion int64   `json:"completion_tokens"`
			}
		}
		if resp.StatusCode != 200 || json.Unmarshal(body, &v) != nil {
			t.Fatalf("usage: %d %s", resp.StatusCode, body)
		}
		out := map[string]int64{}
		for _, r := range v.Data {
			if r.PersonName == nil || r.Completion != r.Requests { // the fake engine replies one token
				t.Fatalf("row %s", body)
			}
			out[*r.PersonName] = r.Requests
		}
		return out
	}
	if got := usage(root); len(got) != 2 || got["alice"] != 3 || got["bob"] != 1 {
		t.Errorf("admin: %v, want alice 3 (two keys) and bob 1", got)
	}
	if got := usage(alice1); len(got) != 1 || got["alice"] != 3 {
		t.Errorf("alice: %v, want her own 3 across her keys", got)
	}
	if got := usage(bob); len(got) != 1 || got["bob"] != 1 {
		t.Errorf("bob: %v, want his own 1", got)
	}
}
