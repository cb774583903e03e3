package web_test

import (
	"testing"
)

// TestCatalogPullDuringModelsMove: while the models folder is being moved, POST
// /api/catalog/pulls is a 409 models_moving that says so, at once, and starts no pull; after
// the move it is accepted.
func TestCatalogPullDuringModelsMove(t *testing.T) {
	ct := newCatalogTeam(t)
	end, err := ct.Core.BeginModelsMove()
	if err != nil {
		t.Fatal(err)
	}
	r := ct.withKey(t, ct.RootKey, "POST", "/api/catalog/pulls", `{"model":"hf.co/owner/x-GGUF:Q8_0"}`)
	e, _ := r.obj["error"].(map[string]any)
	if r.status != 409 || r.code() != "models_moving" || e["message"] != "the models folder is being moved; pull again once the move is done" {
		t.Fatalf("pull during the move: %d %s", r.status, r.body)
	}
	if list := ct.withKey(t, ct.RootKey, "GET", "/api/catalog/pulls", ""); len(list.obj["data"].([]any)) != 0 {
		t.Fatalf("a pull started during the move: %s", list.body)
	}
	end()
	if r := ct.withKey(t, ct.RootKey, "POST", "/api/catalog/pulls", `{"model":"hf.co/owner/x-GGUF:Q8_0"}`); r.status != 202 {
		t.Fatalf("pull after the move: %d %s", r.status, r.body)
	}
}
