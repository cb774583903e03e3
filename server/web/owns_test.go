package web_test

import (
	"testing"

	"github.com/superfluid/superfluid/server/web"
)

// TestOwns: the web API takes the contract's prefixes and nothing of Ollama's /api.
func TestOwns(t *testing.T) {
	for path, want := range map[string]bool{
		"/api/auth/login": true, "/api/admin/users/x": true, "/api/profile": true, "/api/profile/password": true,
		"/api/keys": true, "/api/keys/k1": true, "/api/bookings/b1/cancel": true, "/api/lanes": true, "/api/usage": true,
		"/api/storage": true, "/api/catalog/pulls/p1": true, "/api/docs": true, "/api/docs/index.html": true,
		"/api/openapi.json": true, "/ui/": true, "/ui": true, "/ui/users": true,
		"/api/chat": false, "/api/tags": false, "/api/generate": false, "/api/show": false, "/api/pull": false, "/api/ps": false,
		"/api/version": false, "/api/blobs/sha256:x": false, "/api/embed": false, "/api/keysx": false, "/api/lanesmith": false,
		"/api/auth": false, "/v1/keys": false, "/": false, "/uix": false,
	} {
		if got := web.Owns(path); got != want {
			t.Errorf("Owns(%q) = %v, want %v", path, got, want)
		}
	}
}
