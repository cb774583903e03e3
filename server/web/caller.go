package web

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/people"
	"github.com/superfluid/superfluid/server/web/sessions"
)

// CookieName is the session cookie's name; CSRFHeader the header carrying the session's token.
const (
	CookieName = "sf_session"
	CSRFHeader = "X-CSRF-Token"
	cookiePath = "/api"
	// expiresKey holds the session's expiry (Unix seconds) in gin's context, for /api/auth/me.
	expiresKey = "web.session_expires"
)

// admit runs the checks every route shares (the package doc's order) and returns the caller.
func (a *API) admit(c *gin.Context, access Access) (Caller, error) {
	if err := sameOrigin(c); err != nil {
		return Caller{}, err
	}
	if access == Public {
		// No caller, no CSRF: a stale or live cookie is no reason to refuse sign-in (which
		// reads the cookie itself to end its session) or the docs.
		return Caller{}, nil
	}
	caller, err := a.caller(c)
	switch {
	case errors.Is(err, errNoCaller):
		return Caller{}, notSignedIn
	case err != nil:
		return Caller{}, err
	}
	if !caller.signedIn() {
		return Caller{}, notSignedIn
	}
	if access == Admin && !caller.Admin() {
		return Caller{}, Errorf(http.StatusForbidden, "admin_required", "", "this route is for admins; sign in as an admin or use an admin key")
	}
	if caller.Session != "" && writes(c.Request.Method) {
		got := c.GetHeader(CSRFHeader)
		if subtle.ConstantTimeCompare([]byte(got), []byte(caller.Session)) != 1 {
			return Caller{}, Errorf(http.StatusForbidden, "csrf_failed", "",
				"a write with a session cookie needs the header %s with the session's csrf_token (from login or /api/auth/me)", CSRFHeader)
		}
	}
	c.Request = c.Request.WithContext(withCaller(c.Request.Context(), caller))
	return caller, nil
}

var (
	errNoCaller = errors.New("no caller")
	notSignedIn = Errorf(http.StatusUnauthorized, "not_signed_in", "", "not signed in: sign in with POST /api/auth/login, or send an API key")
)

// caller finds who sent the request: the key the guard authenticated, else the session cookie.
// errNoCaller (wrapped in a 401 for the SignedIn routes) when there is neither.
func (a *API) caller(c *gin.Context) (Caller, error) {
	ctx := c.Request.Context()
	if id, keyed := auth.FromContext(ctx); keyed && id != nil {
		caller := Caller{Key: id}
		if id.Person != nil {
			p, err := a.cfg.People.Get(ctx, id.Person.ID)
			if err != nil {
				return Caller{}, err
			}
			caller.Person = p
		}
		return caller, nil
	}
	cookie, err := c.Request.Cookie(CookieName)
	if err != nil || cookie.Value == "" {
		return Caller{}, errNoCaller
	}
	sess, err := a.cfg.Sessions.Lookup(ctx, cookie.Value)
	switch {
	case errors.Is(err, sessions.ErrExpired):
		a.clearCookie(c)
		return Caller{}, Errorf(http.StatusUnauthorized, "session_expired", "", "the session has expired; sign in again")
	case errors.Is(err, sessions.ErrUnknown):
		a.clearCookie(c)
		return Caller{}, notSignedIn
	case err != nil:
		return Caller{}, err
	}
	p, err := a.cfg.People.Get(ctx, sess.PersonID)
	if errors.Is(err, people.ErrNotFound) || (err == nil && p.State != people.StateActive) {
		// Disabling ends the sessions (OnDisable); this catches a person changed by another process.
		_, _ = a.cfg.Sessions.EndPerson(ctx, sess.PersonID, "")
		a.clearCookie(c)
		return Caller{}, notSignedIn
	}
	if err != nil {
		return Caller{}, err
	}
	if sess.NewID != "" {
		a.setCookie(c, sess.NewID)
	}
	c.Set(expiresKey, sess.ExpiresAt.Unix())
	return Caller{Person: p, Session: sess.CSRFToken}, nil
}

// withCaller puts a session caller's identity in ctx the way the guard puts a key's, so the
// services (bookings.PersonFrom, people.ActorOf) see the person. A key's is there already.
func withCaller(ctx context.Context, c Caller) context.Context {
	if c.Key != nil {
		return ctx
	}
	p := c.Person
	return auth.NewContext(ctx, &auth.Identity{ID: "session:" + p.ID, Name: "web session", Admin: p.Role == people.RoleAdmin,
		Source: "web", Person: &auth.Person{ID: p.ID, Name: p.Name, Role: string(p.Role)}})
}

// sameOrigin refuses a request a browser sent from another site: an Origin that is not this
// server's own (scheme://Host), or a Sec-Fetch-Site of cross-site or same-site (a sibling
// subdomain is another site's page too). A request with neither is not from a page.
func sameOrigin(c *gin.Context) error {
	r := c.Request
	switch r.Header.Get("Sec-Fetch-Site") {
	case "cross-site", "same-site":
		return Errorf(http.StatusForbidden, "cross_origin", "", "requests from other sites' pages are refused")
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return nil
	}
	if !strings.EqualFold(origin, schemeOf(c)+"://"+r.Host) {
		return Errorf(http.StatusForbidden, "cross_origin", "", "requests from pages of another origin are refused")
	}
	return nil
}

// schemeOf is the scheme the client used: https over TLS or behind a trusted proxy saying so.
// A proxy is trusted when gin took the client's address from its headers (--trusted-proxies).
func schemeOf(c *gin.Context) string {
	r := c.Request
	if r.TLS != nil || (c.ClientIP() != c.RemoteIP() && strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")) {
		return "https"
	}
	return "http"
}

func writes(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// setCookie sets the session cookie; its lifetime is the absolute expiry (the idle one is the
// server's to enforce: a cookie cannot slide without a reply).
func (a *API) setCookie(c *gin.Context, id string) {
	http.SetCookie(c.Writer, &http.Cookie{Name: CookieName, Value: id, Path: cookiePath, MaxAge: int(a.cfg.MaxAge.Seconds()),
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: schemeOf(c) == "https"})
}

func (a *API) clearCookie(c *gin.Context) {
	http.SetCookie(c.Writer, &http.Cookie{Name: CookieName, Value: "", Path: cookiePath, MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: schemeOf(c) == "https"})
}

// endSessionsOfDisabled is the people service's OnDisable hook: a disabled person's sessions end.
func (a *API) endSessionsOfDisabled(ctx context.Context, p people.Person) {
	_, _ = a.cfg.Sessions.EndPerson(context.WithoutCancel(ctx), p.ID, "")
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
