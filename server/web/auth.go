package web

import (
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/superfluid/superfluid/server/people"
)

// User is a person on the wire, as /v1/admin/users shows one (times in Unix seconds).
type User struct {
	Object    string `json:"object" enum:"user"`
	ID        string `json:"id"`
	Name      string `json:"name"`
	Role      string `json:"role" enum:"admin,member"`
	State     string `json:"state" enum:"active,disabled"`
	CreatedAt int64  `json:"created_at"`
	UpdatedAt int64  `json:"updated_at"`
}

// UserOf is p on the wire.
func UserOf(p people.Person) User {
	return User{Object: "user", ID: p.ID, Name: p.Name, Role: string(p.Role), State: string(p.State),
		CreatedAt: p.CreatedAt.Unix(), UpdatedAt: p.UpdatedAt.Unix()}
}

// SessionInfo is the answer to a sign-in and to /api/auth/me: who, the CSRF token every write
// must carry, and when the session ends if unused (Unix seconds).
type SessionInfo struct {
	User      User   `json:"user"`
	CSRFToken string `json:"csrf_token" doc:"send it as the X-CSRF-Token header on every POST, PUT, PATCH and DELETE"`
	ExpiresAt int64  `json:"expires_at"`
}

// LoginRequest is the body of POST /api/auth/login.
type LoginRequest struct {
	Name     string `json:"name" required:"true" minLength:"1" maxLength:"64"`
	Password string `json:"password" required:"true" minLength:"1" maxLength:"1024"`
}

func (a *API) authRoutes() {
	Handle(a, http.MethodPost, "/api/auth/login", Meta{Summary: "Sign in", Tag: "auth", Access: Public}, a.login)
	Handle(a, http.MethodPost, "/api/auth/logout", Meta{Summary: "Sign out", Tag: "auth", Access: SignedIn}, a.logout)
	Handle(a, http.MethodGet, "/api/auth/me", Meta{Summary: "Who is signed in", Tag: "auth", Access: SignedIn}, a.me)
}

var invalidCredentials = Errorf(http.StatusUnauthorized, "invalid_credentials", "", "wrong name or password")

// login checks the lockout first (a locked account is not even tried, nor counted), then the
// password; a failure of either kind (unknown name, wrong password, disabled) is counted.
func (a *API) login(r *Request[LoginRequest]) (SessionInfo, error) {
	ctx, c := r.Ctx, r.Gin
	address := c.ClientIP()
	defer a.attempts.lockAttempt(r.Body.Name, address)()
	wait, locked, err := a.cfg.Sessions.Locked(ctx, r.Body.Name, address)
	if err != nil {
		return SessionInfo{}, err
	}
	if locked {
		return SessionInfo{}, &Error{Status: http.StatusTooManyRequests, Code: "too_many_attempts", RetryAfter: wait,
			Message: "too many failed sign-ins; try again in " + wait.Round(time.Second).String()}
	}
	p, err := a.cfg.People.Verify(ctx, r.Body.Name, r.Body.Password)
	if errors.Is(err, people.ErrWrongPassword) || errors.Is(err, people.ErrDisabled) {
		if err := a.cfg.Sessions.Fail(ctx, r.Body.Name, address); err != nil {
			return SessionInfo{}, err
		}
		return SessionInfo{}, invalidCredentials
	}
	if err != nil {
		return SessionInfo{}, err
	}
	if old, err := c.Request.Cookie(CookieName); err == nil {
		_ = a.cfg.Sessions.Delete(ctx, old.Value) // a new sign-in is a new id: the old one ends
	}
	id, sess, err := a.cfg.Sessions.Create(ctx, p.ID)
	if err != nil {
		return SessionInfo{}, err
	}
	a.setCookie(c, id)
	return SessionInfo{User: UserOf(p), CSRFToken: sess.CSRFToken, ExpiresAt: sess.ExpiresAt.Unix()}, nil
}

func (a *API) logout(r *Request[NoBody]) (NoBody, error) {
	if r.Caller.Session != "" { // the session ends, with its ids rotated out but still in their grace
		if err := a.cfg.Sessions.End(r.Ctx, r.Caller.Session); err != nil {
			return NoBody{}, err
		}
	}
	a.clearCookie(r.Gin)
	return NoBody{}, nil
}

// me answers with the session, or for a key with its person (no CSRF token: keys need none).
func (a *API) me(r *Request[NoBody]) (SessionInfo, error) {
	p, err := r.Caller.person() // an admin key of nobody is nobody to show
	if err != nil {
		return SessionInfo{}, err
	}
	info := SessionInfo{User: UserOf(p), CSRFToken: r.Caller.Session}
	if r.Caller.Session != "" {
		info.ExpiresAt = r.Gin.GetInt64(expiresKey)
	}
	return info, nil
}

// keyedMutex holds a mutex per key while someone waits on or holds it.
type keyedMutex struct {
	mu    sync.Mutex
	locks map[string]*keyedLock
}

type keyedLock struct {
	sync.Mutex
	users int
}

func (k *keyedMutex) lock(key string) (unlock func()) {
	k.mu.Lock()
	if k.locks == nil {
		k.locks = map[string]*keyedLock{}
	}
	l := k.locks[key]
	if l == nil {
		l = &keyedLock{}
		k.locks[key] = l
	}
	l.users++
	k.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		k.mu.Lock()
		if l.users--; l.users == 0 {
			delete(k.locks, key)
		}
		k.mu.Unlock()
	}
}

// lockAttempt holds the sign-in checks of account and of address until the returned func:
// the lockout's check (Locked), the password's and the failure's count (Fail) are one step for
// them, so guesses sent at once cannot all pass the check before any is counted. The account
// is always taken before the address, so two attempts never wait on each other in a cycle.
func (k *keyedMutex) lockAttempt(account, address string) (unlock func()) {
	ua := k.lock("account:" + strings.ToLower(strings.TrimSpace(account)))
	ub := k.lock("address:" + address)
	return func() { ub(); ua() }
}
