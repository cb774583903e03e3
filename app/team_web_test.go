package app

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/people"
	"github.com/superfluid/superfluid/server/servertest"
)

// TestTeamWebWired: serve --team mounts the web API over the app's own people and store: the
// first admin signs in with a password and gets a session cookie that /api/auth/me accepts,
// the OpenAPI document is served; Ollama's /api/tags still takes a key. Outside team mode the
// web paths are Ollama's unknown routes.
func TestTeamWebWired(t *testing.T) {
	cfg := testConfig(t, testModel)
	cfg.Team = true
	a, srv := startServer(t, cfg, false)
	ctx := context.Background()
	if _, err := a.People().SetPassword(ctx, people.CLI, people.FirstAdminName, "web-password-1"); err != nil {
		t.Fatal(err)
	}
	resp, body := servertest.Do(t, "POST", srv.URL+"/api/auth/login", `{"name": "admin", "password": "web-password-1"}`, "Content-Type", "application/json")
	var cookie string
	for _, c := range resp.Cookies() {
		if c.Name == "sf_session" {
			cookie = c.Value
		}
	}
	if resp.StatusCode != 200 || cookie == "" {
		t.Fatalf("login: %d %s", resp.StatusCode, body)
	}
	if resp, body := servertest.Do(t, "GET", srv.URL+"/api/auth/me", "", "Cookie", "sf_session="+cookie); resp.StatusCode != 200 || !strings.Contains(string(body), `"name":"admin"`) {
		t.Fatalf("me: %d %s", resp.StatusCode, body)
	}
	if resp, body := servertest.Do(t, "GET", srv.URL+"/api/openapi.json", ""); resp.StatusCode != 200 || !strings.Contains(string(body), `"openapi": "3.1.0"`) {
		t.Fatalf("openapi.json: %d %.200s", resp.StatusCode, body)
	}
	key, _, err := a.Keys().Create(ctx, auth.NewKey{Name: "admin-key", Person: "admin"})
	if err != nil {
		t.Fatal(err)
	}
	if resp, body := servertest.Do(t, "GET", srv.URL+"/api/tags", "", "Authorization", "Bearer "+key); resp.StatusCode != http.StatusOK {
		t.Fatalf("/api/tags: %d %s", resp.StatusCode, body)
	}

	_, single := startServer(t, testConfig(t, testModel), false)
	if resp, body := servertest.Do(t, "GET", single.URL+"/api/auth/me", ""); resp.StatusCode != 404 || !strings.HasPrefix(string(body), `{"error":"`) {
		t.Fatalf("outside team mode: %d %s", resp.StatusCode, body)
	}
}
