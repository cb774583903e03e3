package forward

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestUpstreamUserinfoStaysSecret: an upstream URL with a user and password (basic auth in
// front of the model server) still authenticates every request, but the password is in no
// error a client is shown (502 upstream_error quotes the upstream) and not in the model's path.
func TestUpstreamUserinfoStaysSecret(t *testing.T) {
	var noAuth int
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "admin" || p != "s3cret" {
			noAuth++
			http.Error(w, "who are you", http.StatusUnauthorized)
			return
		}
		http.Error(w, "broken", http.StatusInternalServerError)
	}))
	defer up.Close()
	withUser := strings.Replace(up.URL, "http://", "http://admin:s3cret@", 1)
	m, err := NewModel(context.Background(), "x", Config{URL: withUser, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(m.Path, "s3cret") {
		t.Errorf("the model's path %q has the password", m.Path)
	}
	e := m.Requests.(*Engine)
	if _, err := e.post(context.Background(), "/chat/completions", map[string]any{}); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("an upstream's 500: %v, want an error without the password", err)
	}
	// A lane's failed start is quoted to clients too (model_unavailable).
	if _, err := NewModel(context.Background(), "x", Config{URL: withUser, Model: "m", MustAnswer: true}); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("a start whose probe fails: %v, want an error without the password", err)
	}
	if noAuth != 0 {
		t.Errorf("%d requests reached the upstream without its basic auth", noAuth)
	}
	gone, err := NewModel(context.Background(), "x", Config{URL: "http://admin:s3cret@127.0.0.1:1/v1", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gone.Requests.(*Engine).post(context.Background(), "/chat/completions", map[string]any{}); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("an upstream that refuses connections: %v, want an error without the password", err)
	}
}
