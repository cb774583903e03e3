package server_test

import (
	"strings"
	"testing"
)

// TestModelsMoveAfterAuth: during a move, the checks of who asks come first: a client without
// a key gets 401, a non-admin key 403 on the admin routes, and a key limited to m1 the 404 of
// an unknown model for m2 on every route that names one; none of them learns of the move.
func TestModelsMoveAfterAuth(t *testing.T) {
	k := setupKeyed(t, "127.0.0.1")
	end, err := k.cat.Svc.BeginModelsMove()
	if err != nil {
		t.Fatal(err)
	}
	defer end()
	admin := []struct{ path, body string }{
		{"/api/pull", `{"model": "hf.co/owner/repo:Q8_0", "stream": false}`},
		{"/api/delete", `{"model": "m1"}`},
		{"/api/copy", `{"source": "m1", "destination": "m3"}`},
		{"/v1/models/load", `{"model": "m1"}`},
		{"/v1/lora/load", `{"model": "m1", "adapter": "/nowhere/tone.gguf"}`},
	}
	for _, r := range admin {
		if status, body := k.post(t, "", r.path, r.body); status != 401 || strings.Contains(body, "moved") {
			t.Errorf("%s without a key: %d %s", r.path, status, body)
		}
		if status, body := k.post(t, k.user, r.path, r.body); status != 403 || strings.Contains(body, "moved") {
			t.Errorf("%s with a non-admin key: %d %s", r.path, status, body)
		}
	}
	for _, r := range modelRoutes {
		path, body := route(r.path, r.body, "m2")
		if status, got := k.post(t, k.scoped, path, body); status != 404 || strings.Contains(got, "moved") {
			t.Errorf("%s %s with a key limited to m1: %d %s", path, body, status, got)
		}
	}
	// The admin learns of it.
	if status, body := k.post(t, k.admin, "/v1/models/load", `{"model": "m1"}`); status != 409 {
		t.Errorf("admin load during the move: %d %s", status, body)
	}
}
