package web_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/superfluid/superfluid/server/people"
	"github.com/superfluid/superfluid/server/web/sessions"
)

// TestForgedCookies: a cookie the server never issued (well-formed or not) is not signed in.
func TestForgedCookies(t *testing.T) {
	tt := newTestTeam(t)
	for _, forged := range []string{"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "not-a-session", strings.Repeat("x", 4000)} {
		b := tt.browser(t)
		b.cookie = forged
		if r := b.do("GET", "/api/auth/me", ""); r.status != 401 || r.code() != "not_signed_in" {
			t.Errorf("forged %.20q: %d %s", forged, r.status, r.body)
		}
	}
}

// TestSessionIdleAndAbsoluteExpiry: a session unused for 12 h ends; one in use ends 7 days
// after its sign-in, its rotations notwithstanding.
func TestSessionIdleAndAbsoluteExpiry(t *testing.T) {
	tt := newTestTeam(t)
	idle := tt.signIn(t, "bob", "password1")
	tt.Clock.Advance(11 * time.Hour)
	if r := idle.do("GET", "/api/auth/me", ""); r.status != 200 {
		t.Fatalf("after 11 h: %d %s", r.status, r.body)
	}
	tt.Clock.Advance(12*time.Hour + time.Second)
	if r := idle.do("GET", "/api/auth/me", ""); r.status != 401 || r.code() != "session_expired" {
		t.Fatalf("after 12 h idle: %d %s", r.status, r.body)
	}

	busy := tt.signIn(t, "bob", "password1")
	start := tt.Clock.Now()
	for tt.Clock.Now().Sub(start) < 7*24*time.Hour-11*time.Hour {
		tt.Clock.Advance(11 * time.Hour)
		if r := busy.do("GET", "/api/auth/me", ""); r.status != 200 {
			t.Fatalf("used at %s: %d %s", tt.Clock.Now().Sub(start), r.status, r.body)
		}
	}
	tt.Clock.Advance(7*24*time.Hour - tt.Clock.Now().Sub(start))
	if r := busy.do("GET", "/api/auth/me", ""); r.status != 401 || r.code() != "session_expired" {
		t.Fatalf("at 7 days: %d %s", r.status, r.body)
	}
}

// TestSessionRotation: after an hour of use the reply carries a new id; the old one works for
// 60 s more, then not at all; sign-in replaces the cookie the browser had.
func TestSessionRotation(t *testing.T) {
	tt := newTestTeam(t)
	b := tt.signIn(t, "bob", "password1")
	first := b.cookie
	tt.Clock.Advance(time.Hour)
	if r := b.do("GET", "/api/auth/me", ""); r.status != 200 || b.cookie == first || b.cookie == "" {
		t.Fatalf("after an hour: %d %s (cookie rotated: %v)", r.status, r.body, b.cookie != first)
	}
	second := b.cookie
	old := tt.browser(t)
	old.cookie, old.csrf = first, b.csrf
	tt.Clock.Advance(30 * time.Second)
	if r := old.do("GET", "/api/auth/me", ""); r.status != 200 {
		t.Fatalf("the old id within its grace: %d %s", r.status, r.body)
	}
	tt.Clock.Advance(31 * time.Second)
	old.cookie = first
	if r := old.do("GET", "/api/auth/me", ""); r.status != 401 {
		t.Fatalf("the old id after its grace: %d %s", r.status, r.body)
	}
	if r := b.do("GET", "/api/auth/me", ""); r.status != 200 || b.cookie != second {
		t.Fatalf("the new id: %d %s", r.status, r.body)
	}
	// Signing in again with a live cookie: a new id, and the old session ends.
	r := b.do("POST", "/api/auth/login", `{"name": "bob", "password": "password1"}`)
	if r.status != 200 || b.cookie == second {
		t.Fatalf("sign-in again: %d %s", r.status, r.body)
	}
	replay := tt.browser(t)
	replay.cookie = second
	if r := replay.do("GET", "/api/auth/me", ""); r.status != 401 {
		t.Fatalf("the id from before the second sign-in: %d %s", r.status, r.body)
	}
}

// TestSignOutEndsRotatedIDs: after sign-out, neither the current id nor one rotated out of the
// session (still in its grace) opens it.
func TestSignOutEndsRotatedIDs(t *testing.T) {
	tt := newTestTeam(t)
	b := tt.signIn(t, "bob", "password1")
	first := b.cookie
	tt.Clock.Advance(time.Hour)
	b.do("GET", "/api/auth/me", "")
	current := b.cookie
	if r := b.do("POST", "/api/auth/logout", ""); r.status != 204 {
		t.Fatalf("logout: %d %s", r.status, r.body)
	}
	for _, id := range []string{first, current} {
		replay := tt.browser(t)
		replay.cookie = id
		if r := replay.do("GET", "/api/auth/me", ""); r.status != 401 {
			t.Errorf("replayed after sign-out: %d %s", r.status, r.body)
		}
	}
}

// TestCSRF: a write with a session cookie needs the session's own token.
func TestCSRF(t *testing.T) {
	tt := newTestTeam(t)
	bob := tt.signIn(t, "bob", "password1")
	root := tt.signIn(t, "root", "password0")
	body := `{"name": "laptop"}`
	for _, c := range []struct{ name, token string }{{"no token", ""}, {"another session's", root.csrf}, {"a wrong one", "x" + bob.csrf}} {
		h := []string{"X-CSRF-Token", c.token}
		saved := bob.csrf
		bob.csrf = ""
		r := bob.do("POST", "/api/keys", body, h...)
		bob.csrf = saved
		if r.status != 403 || r.code() != "csrf_failed" {
			t.Errorf("%s: %d %s", c.name, r.status, r.body)
		}
	}
	if r := bob.do("POST", "/api/keys", body); r.status != 201 {
		t.Fatalf("with the token: %d %s", r.status, r.body)
	}
	// A key is no ambient credential: no token needed (an admin's: a member's key may not
	// manage keys at all, see TestRev20aScopedKeyCannotMintUnscopedKey).
	if r := tt.withKey(t, tt.RootKey, "POST", "/api/keys", `{"name": "script"}`); r.status != 201 {
		t.Fatalf("with a key: %d %s", r.status, r.body)
	}
}

// TestCrossOrigin: a page of another origin or site is refused, sign-in included, with no
// CORS header; this server's own origin passes.
func TestCrossOrigin(t *testing.T) {
	tt := newTestTeam(t)
	bob := tt.signIn(t, "bob", "password1")
	login := `{"name": "bob", "password": "password1"}`
	for _, h := range [][]string{{"Origin", "http://evil.example"}, {"Origin", "null"}, {"Sec-Fetch-Site", "cross-site"}, {"Sec-Fetch-Site", "same-site"},
		{"Origin", strings.Replace(tt.URL, "http://", "https://", 1)}} {
		for _, c := range []struct{ method, path, body string }{{"POST", "/api/auth/login", login}, {"GET", "/api/auth/me", ""}, {"POST", "/api/keys", `{"name": "k"}`}} {
			r := bob.do(c.method, c.path, c.body, h...)
			if r.status != 403 || r.code() != "cross_origin" {
				t.Errorf("%s %s with %s: %d %s", c.method, c.path, h, r.status, r.body)
			}
			if acao := r.header.Get("Access-Control-Allow-Origin"); acao != "" {
				t.Errorf("%s %s with %s: CORS header %q", c.method, c.path, h, acao)
			}
		}
	}
	if r := bob.do("GET", "/api/auth/me", "", "Origin", tt.URL, "Sec-Fetch-Site", "same-origin"); r.status != 200 {
		t.Fatalf("own origin: %d %s", r.status, r.body)
	}
	// Not even a key's allowed origins open the web API to another site.
	if r := tt.withKey(t, tt.BobKey, "GET", "/api/auth/me", "", "Origin", "http://evil.example"); r.status != 403 || r.code() != "cross_origin" {
		t.Fatalf("key from another origin: %d %s", r.status, r.body)
	}
}

// login tries a sign-in from address.
func login(t *testing.T, tt *testTeam, name, password, address string) reply {
	t.Helper()
	return tt.browser(t).do("POST", "/api/auth/login", fmt.Sprintf(`{"name": %q, "password": %q}`, name, password), "X-Forwarded-For", address)
}

// TestLockoutByAddress: 40 failed sign-ins from one address (each for another name): from the
// 31st on, 429 too_many_attempts with Retry-After, even with the right password and without
// counting; another address is not locked; after the window, the right password signs in.
func TestLockoutByAddress(t *testing.T) {
	tt := newTestTeam(t)
	for i := range 40 {
		r := login(t, tt, fmt.Sprintf("nobody%d", i), "wrong-password", "10.0.0.1")
		want, code := 401, "invalid_credentials"
		if i >= 30 {
			want, code = 429, "too_many_attempts"
		}
		if r.status != want || r.code() != code {
			t.Fatalf("attempt %d: %d %s", i+1, r.status, r.body)
		}
		if i >= 30 {
			if ra, _ := strconv.Atoi(r.header.Get("Retry-After")); ra < 1 || ra > 900 {
				t.Fatalf("attempt %d: Retry-After %q", i+1, r.header.Get("Retry-After"))
			}
		}
		tt.Clock.Advance(time.Second)
	}
	if r := login(t, tt, "bob", "password1", "10.0.0.1"); r.status != 429 {
		t.Fatalf("the right password from the locked address: %d %s", r.status, r.body)
	}
	if r := login(t, tt, "bob", "password1", "10.0.0.2"); r.status != 200 {
		t.Fatalf("another address: %d %s", r.status, r.body)
	}
	tt.Clock.Advance(15 * time.Minute)
	if r := login(t, tt, "bob", "password1", "10.0.0.1"); r.status != 200 {
		t.Fatalf("after the window: %d %s", r.status, r.body)
	}
}

// TestLockoutByAccount: 11 failed sign-ins for one account, each from another address: the
// 11th is 429 (Retry-After the seconds until the oldest failure leaves the 15-minute window,
// which slides), the right password too; then it passes.
func TestLockoutByAccount(t *testing.T) {
	tt := newTestTeam(t)
	for i := range 11 {
		if i == 5 {
			tt.Clock.Advance(10 * time.Minute) // five at t0, the rest at t0+10m
		}
		r := login(t, tt, "BOB", "wrong-password", fmt.Sprintf("10.0.1.%d", i))
		want := 401
		if i == 10 {
			want = 429
		}
		if r.status != want {
			t.Fatalf("attempt %d: %d %s", i+1, r.status, r.body)
		}
		if i == 10 {
			// The first five (at t0) age out at t0+15m: 5 minutes from now.
			if ra := r.header.Get("Retry-After"); ra != "300" {
				t.Fatalf("Retry-After %q, want 300", ra)
			}
		}
	}
	if r := login(t, tt, "bob", "password1", "10.0.2.1"); r.status != 429 || r.code() != "too_many_attempts" {
		t.Fatalf("the right password for the locked account: %d %s", r.status, r.body)
	}
	tt.Clock.Advance(5*time.Minute + time.Second) // the window slides past the first five
	if r := login(t, tt, "bob", "password1", "10.0.2.1"); r.status != 200 {
		t.Fatalf("after the oldest failures left the window: %d %s", r.status, r.body)
	}
}

// TestDisabledPersonsSession: disabling a person ends their sessions at once (the people
// service's OnDisable, chained after any hook set before).
func TestDisabledPersonsSession(t *testing.T) {
	tt := newTestTeam(t)
	heard := false
	tt.People.OnDisable(func(context.Context, people.Person) { heard = true })
	bob := tt.signIn(t, "bob", "password1")
	root := tt.signIn(t, "root", "password0")
	if _, err := tt.People.Disable(context.Background(), people.CLI, "bob"); err != nil {
		t.Fatal(err)
	}
	// Ended by the hook, not just refused at the next request.
	if _, err := tt.Sessions.Lookup(context.Background(), bob.cookie); !errors.Is(err, sessions.ErrUnknown) {
		t.Fatalf("the disabled person's session is still stored: %v", err)
	}
	if r := bob.do("GET", "/api/auth/me", ""); r.status != 401 {
		t.Fatalf("disabled person's session: %d %s", r.status, r.body)
	}
	if !heard {
		t.Fatal("the hook set after the web API's was not called")
	}
	if r := root.do("GET", "/api/auth/me", ""); r.status != 200 {
		t.Fatalf("another person's session: %d %s", r.status, r.body)
	}
	if r := login(t, tt, "bob", "password1", "10.0.3.1"); r.status != 401 || r.code() != "invalid_credentials" {
		t.Fatalf("a disabled person signs in: %d %s", r.status, r.body)
	}
}
