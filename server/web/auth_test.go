package web_test

import "testing"

// TestSignInAndMe: sign-in sets the cookie (HttpOnly, SameSite=Lax, Path=/api), me answers
// with the person and the CSRF token, sign-out ends the session.
func TestSignInAndMe(t *testing.T) {
	tt := newTestTeam(t)
	b := tt.browser(t)
	if r := b.do("GET", "/api/auth/me", ""); r.status != 401 || r.code() != "not_signed_in" {
		t.Fatalf("me before sign-in: %d %s", r.status, r.body)
	}
	r := b.do("POST", "/api/auth/login", `{"name": "bob", "password": "password1"}`)
	if r.status != 200 || b.cookie == "" || b.csrf == "" {
		t.Fatalf("login: %d %s", r.status, r.body)
	}
	sc := r.header.Get("Set-Cookie")
	for _, want := range []string{"HttpOnly", "SameSite=Lax", "Path=/api"} {
		if !contains(sc, want) {
			t.Errorf("Set-Cookie %q lacks %s", sc, want)
		}
	}
	if contains(sc, "Secure") {
		t.Errorf("Set-Cookie %q is Secure over plain HTTP", sc)
	}
	me := b.do("GET", "/api/auth/me", "")
	user, _ := me.obj["user"].(map[string]any)
	if me.status != 200 || user["name"] != "bob" || user["role"] != "member" || me.obj["csrf_token"] != b.csrf || me.obj["expires_at"] == nil {
		t.Fatalf("me: %d %s", me.status, me.body)
	}
	old := b.cookie
	if r := b.do("POST", "/api/auth/logout", ""); r.status != 204 || b.cookie != "" {
		t.Fatalf("logout: %d %s (cookie %q)", r.status, r.body, b.cookie)
	}
	b.cookie = old // the browser replays the cookie it had
	if r := b.do("GET", "/api/auth/me", ""); r.status != 401 || r.code() != "not_signed_in" {
		t.Fatalf("me after logout with the old cookie: %d %s", r.status, r.body)
	}
}

func contains(s, sub string) bool { return len(sub) == 0 || indexOf(s, sub) >= 0 }

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

// TestSecureCookieBehindTLSProxy: behind a trusted proxy saying the client came over HTTPS,
// the cookie is Secure; the header alone, on a request no proxy forwarded, is ignored.
func TestSecureCookieBehindTLSProxy(t *testing.T) {
	tt := newTestTeam(t)
	login := `{"name": "bob", "password": "password1"}`
	r := tt.browser(t).do("POST", "/api/auth/login", login, "X-Forwarded-For", "10.1.2.3", "X-Forwarded-Proto", "https")
	if r.status != 200 || !contains(r.header.Get("Set-Cookie"), "Secure") {
		t.Fatalf("behind a TLS proxy: %d %q", r.status, r.header.Get("Set-Cookie"))
	}
	r = tt.browser(t).do("POST", "/api/auth/login", login, "X-Forwarded-Proto", "https")
	if r.status != 200 || contains(r.header.Get("Set-Cookie"), "Secure") {
		t.Fatalf("the header without a proxy: %d %q", r.status, r.header.Get("Set-Cookie"))
	}
}
