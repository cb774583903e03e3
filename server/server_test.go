package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/server/core"
)

// TestUnroutedErrorShapes: requests no handler takes are answered in the shape of the dialect
// their path belongs to.
func TestUnroutedErrorShapes(t *testing.T) {
	tmpl, _ := chat.Parse("")
	svc := core.New(core.Config{}, nil, &core.Model{ID: "fake", Path: "/m/fake.gguf", Engine: enginetest.New(64, "x"), Template: tmpl})
	srv := httptest.NewServer(New(Config{}, svc))
	defer srv.Close()
	cases := []struct {
		method, path string
		status       int
		check        func(map[string]any) bool
	}{
		{"GET", "/v1/nope", 404, func(b map[string]any) bool {
			e, _ := b["error"].(map[string]any)
			return e["type"] == "invalid_request_error" && strings.Contains(e["message"].(string), "/v1/nope")
		}},
		{"GET", "/api/nope", 404, func(b map[string]any) bool { s, _ := b["error"].(string); return strings.Contains(s, "/api/nope") }},
		{"GET", "/v1/messages/batches", 404, func(b map[string]any) bool {
			e, _ := b["error"].(map[string]any)
			return b["type"] == "error" && e["type"] == "not_found_error"
		}},
		{"PUT", "/v1/chat/completions", 405, func(b map[string]any) bool {
			e, _ := b["error"].(map[string]any)
			return e["type"] == "invalid_request_error"
		}},
		{"DELETE", "/api/chat", 405, func(b map[string]any) bool { _, ok := b["error"].(string); return ok }},
	}
	for _, c := range cases {
		req, _ := http.NewRequest(c.method, srv.URL+c.path, nil)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body map[string]any
		json.NewDecoder(res.Body).Decode(&body)
		res.Body.Close()
		if res.StatusCode != c.status || !c.check(body) {
			t.Errorf("%s %s: %d %v", c.method, c.path, res.StatusCode, body)
		}
	}
}
