package web_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/superfluid/superfluid/server"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/servertest"
)

// TestOllamaRoutesUntouched: in team mode with the web API mounted, Ollama's own /api routes
// still work with a key, and without one are refused as before (Ollama's shape,
// missing_api_key), not taken by the web API's session check.
func TestOllamaRoutesUntouched(t *testing.T) {
	tt := newTestTeam(t)
	if r := tt.withKey(t, tt.BobKey, "GET", "/api/tags", ""); r.status != 200 || r.obj["models"] == nil {
		t.Fatalf("/api/tags: %d %s", r.status, r.body)
	}
	chat := `{"model": "alpha", "stream": false, "messages": [{"role": "user", "content": "hi"}]}`
	if r := tt.withKey(t, tt.BobKey, "POST", "/api/chat", chat); r.status != 200 || r.obj["message"] == nil {
		t.Fatalf("/api/chat: %d %s", r.status, r.body)
	}
	bob := tt.signIn(t, "bob", "password1")
	for _, c := range []struct{ method, path, body string }{{"GET", "/api/tags", ""}, {"POST", "/api/chat", chat}} {
		r := bob.do(c.method, c.path, c.body) // a session cookie is no key for Ollama's routes
		var shape struct {
			Error string `json:"error"`
		}
		if r.status != 401 || json.Unmarshal(r.body, &shape) != nil || shape.Error == "" {
			t.Fatalf("%s without a key: %d %s", c.path, r.status, r.body)
		}
	}
	// The web paths' own refusals are in the web shape: an unknown web route.
	if r := bob.do("GET", "/api/admin/no-such-thing", ""); r.status != 404 || r.obj["error"].(map[string]any)["type"] != "not_found_error" {
		t.Fatalf("unknown web route: %d %s", r.status, r.body)
	}
}

// TestNoWebOutsideTeamMode: a router without the web API leaves its paths to Ollama's unknown
// route, in Ollama's shape.
func TestNoWebOutsideTeamMode(t *testing.T) {
	svc := core.New(core.Config{}, servertest.Store(t), servertest.EchoModel("alpha", &servertest.Echo{}))
	srv := httptest.NewServer(server.New(server.Config{}, svc))
	t.Cleanup(srv.Close)
	for _, path := range []string{"/api/auth/me", "/api/openapi.json", "/api/lanes"} {
		r := send(t, "GET", srv.URL+path, "", http.Header{})
		var shape struct {
			Error string `json:"error"`
		}
		if r.status != 404 || json.Unmarshal(r.body, &shape) != nil || shape.Error == "" {
			t.Errorf("%s: %d %s", path, r.status, r.body)
		}
	}
}

// TestDocsViewer: /api/docs is the embedded swagger-ui, pointed at this server's document.
func TestDocsViewer(t *testing.T) {
	tt := newTestTeam(t)
	r := send(t, "GET", tt.URL+"/api/docs/index.html", "", http.Header{})
	if r.status != 200 || !contains(string(r.body), "swagger-ui") {
		t.Fatalf("index: %d %.300s", r.status, r.body)
	}
	r = send(t, "GET", tt.URL+"/api/docs/swagger-initializer.js", "", http.Header{})
	if r.status != 200 || !contains(string(r.body), `"/api/openapi.json"`) || contains(string(r.body), "petstore") {
		t.Fatalf("initializer: %d %s", r.status, r.body)
	}
	if r := send(t, "GET", tt.URL+"/api/docs/swagger-ui-bundle.js", "", http.Header{}); r.status != 200 || len(r.body) < 100000 {
		t.Fatalf("bundle: %d, %d bytes", r.status, len(r.body))
	}
	req, _ := http.NewRequest("GET", tt.URL+"/api/docs", nil)
	res, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusFound || res.Header.Get("Location") != "/api/docs/index.html" {
		t.Fatalf("/api/docs: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
}
