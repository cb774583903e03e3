// Package sessions keeps the web API's cookie sessions and its sign-in failures, in SQLite
// (server/store, migration 0018). It knows nothing of HTTP: server/web reads the cookie and
// hands this package the id.
//
// A session id is 32 random bytes in base64url; the database keeps only its SHA-256, so a
// stolen database opens no session. A session ends when it is unused for Config.IdleExpiry,
// Config.MaxAge after its sign-in (rotation does not extend it), at sign-out, when its person
// changes password elsewhere or is disabled. Lookup rotates an id in use for RotateAfter: the
// new id is returned for the reply's cookie and the old one keeps working for Grace, so
// requests already in flight with it are not signed out. Each session has a CSRF token, kept
// across rotations (the page holds it), new at each sign-in.
//
// Sign-in failures are kept as (at, account lowercased, address): with AccountLimit failures
// for one account, or AddressLimit from one address, within Window (sliding), Locked says how
// long until enough of them age out. A success clears nothing.
package sessions

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/superfluid/superfluid/server/store"
)

// Defaults of Config.
const (
	DefaultIdleExpiry   = 12 * time.Hour
	DefaultMaxAge       = 7 * 24 * time.Hour
	DefaultRotateAfter  = time.Hour
	DefaultGrace        = 60 * time.Second
	DefaultWindow       = 15 * time.Minute
	DefaultAccountLimit = 10
	DefaultAddressLimit = 30
)

// touchEvery bounds how often a session's last use is written: the idle expiry is hours, so a
// write per request would buy nothing.
const touchEvery = time.Minute

// Errors of Lookup.
var (
	// ErrUnknown: no session has this id (forged, signed out, or long expired and swept).
	ErrUnknown = errors.New("no such session")
	// ErrExpired: the session existed but is past its idle or absolute expiry, or a rotated-out
	// id past its grace. It is deleted.
	ErrExpired = errors.New("the session has expired")
)

// Config configures a Store; zero fields take the defaults above.
type Config struct {
	Store *store.Store
	// Now is the clock; nil is time.Now. Tests move it.
	Now                        func() time.Time
	IdleExpiry, MaxAge         time.Duration
	RotateAfter, Grace         time.Duration
	Window                     time.Duration
	AccountLimit, AddressLimit int
}

// sweepEvery is how often Create and Fail, the rare writes, sweep the expired rows too.
const sweepEvery = 10 * time.Minute

// Store is the sessions of one database. It is safe for concurrent use.
type Store struct {
	cfg       Config
	lastSweep atomic.Int64 // Unix nanoseconds of the last sweep
}

// New returns the Store over cfg.Store.
func New(cfg Config) *Store {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&cfg.IdleExpiry, DefaultIdleExpiry)
	def(&cfg.MaxAge, DefaultMaxAge)
	def(&cfg.RotateAfter, DefaultRotateAfter)
	def(&cfg.Grace, DefaultGrace)
	def(&cfg.Window, DefaultWindow)
	if cfg.AccountLimit <= 0 {
		cfg.AccountLimit = DefaultAccountLimit
	}
	if cfg.AddressLimit <= 0 {
		cfg.AddressLimit = DefaultAddressLimit
	}
	return &Store{cfg: cfg}
}

// sweepNow sweeps when the last sweep is sweepEvery old, so the tables stay small without a
// goroutine of their own to stop.
func (s *Store) sweepNow(ctx context.Context) error {
	now := s.cfg.Now().UnixNano()
	last := s.lastSweep.Load()
	if now-last < int64(sweepEvery) || !s.lastSweep.CompareAndSwap(last, now) {
		return nil
	}
	return s.Sweep(ctx)
}

// Session is a signed-in session as its user sees it.
type Session struct {
	PersonID  string
	CSRFToken string
	// ExpiresAt is when the session ends if unused: the sooner of the idle and absolute expiry.
	ExpiresAt time.Time
	// NewID, from Lookup, is the session's new id when it was rotated by this lookup (the
	// reply sets it as the cookie); "" otherwise.
	NewID string
}

// Create starts a session for a person and returns its id (the cookie's value).
func (s *Store) Create(ctx context.Context, personID string) (id string, sess Session, err error) {
	if err := s.sweepNow(ctx); err != nil {
		return "", Session{}, err
	}
	now := s.cfg.Now()
	id, csrf := randomToken(), randomToken()
	ws := store.WebSession{IDHash: hashID(id), PersonID: personID, CSRFToken: csrf, CreatedAt: now, LastSeenAt: now, IssuedAt: now}
	if err := s.cfg.Store.InsertWebSession(ctx, ws); err != nil {
		return "", Session{}, err
	}
	return id, s.session(ws), nil
}

// Lookup returns the session of id, recording its use; it rotates an id issued RotateAfter
// ago (Session.NewID). ErrUnknown or ErrExpired when there is none to use.
func (s *Store) Lookup(ctx context.Context, id string) (Session, error) {
	if !wellFormed(id) {
		return Session{}, ErrUnknown
	}
	h := hashID(id)
	ws, err := s.cfg.Store.WebSessionByHash(ctx, h)
	if errors.Is(err, store.ErrNotFound) {
		return Session{}, ErrUnknown
	}
	if err != nil {
		return Session{}, err
	}
	now := s.cfg.Now()
	if s.expired(ws, now) {
		if err := s.cfg.Store.DeleteWebSession(ctx, h); err != nil {
			return Session{}, err
		}
		return Session{}, ErrExpired
	}
	if ws.GraceUntil.IsZero() && now.Sub(ws.IssuedAt) >= s.cfg.RotateAfter {
		newID := randomToken()
		next := store.WebSession{IDHash: hashID(newID), PersonID: ws.PersonID, CSRFToken: ws.CSRFToken,
			CreatedAt: ws.CreatedAt, LastSeenAt: now, IssuedAt: now}
		switch err := s.cfg.Store.RotateWebSession(ctx, h, next, now.Add(s.cfg.Grace)); {
		case err == nil:
			sess := s.session(next)
			sess.NewID = newID
			return sess, nil
		case !errors.Is(err, store.ErrNotFound):
			return Session{}, err
		} // another request rotated it a moment ago: this one keeps the old id for the grace
	}
	if now.Sub(ws.LastSeenAt) >= touchEvery {
		if err := s.cfg.Store.TouchWebSession(ctx, h, now); err != nil {
			return Session{}, err
		}
		ws.LastSeenAt = now
	}
	return s.session(ws), nil
}

// Delete ends the session of id (sign-out); an unknown id is no error.
func (s *Store) Delete(ctx context.Context, id string) error {
	if !wellFormed(id) {
		return nil
	}
	return s.cfg.Store.DeleteWebSession(ctx, hashID(id))
}

// End ends the session whose CSRF token is csrf, every id of it (sign-out).
func (s *Store) End(ctx context.Context, csrf string) error {
	if csrf == "" {
		return nil
	}
	return s.cfg.Store.DeleteWebSessionsByCSRF(ctx, csrf)
}

// EndPerson ends every session of a person but the one whose CSRF token is keep ("" ends
// all): a password change keeps the session it was made in, disabling keeps none.
func (s *Store) EndPerson(ctx context.Context, personID, keep string) (int64, error) {
	return s.cfg.Store.DeleteWebSessionsOf(ctx, personID, keep)
}

// Sweep deletes the expired sessions and the failures older than the lockout window.
func (s *Store) Sweep(ctx context.Context) error {
	now := s.cfg.Now()
	if _, err := s.cfg.Store.DeleteExpiredWebSessions(ctx, now.Add(-s.cfg.IdleExpiry), now.Add(-s.cfg.MaxAge), now); err != nil {
		return err
	}
	return s.cfg.Store.DeleteSignInFailuresBefore(ctx, now.Add(-s.cfg.Window))
}

// Locked reports whether sign-in is locked for account from address, and for how long yet:
// the time until enough failures age out of the window to fall below the limit.
func (s *Store) Locked(ctx context.Context, account, address string) (wait time.Duration, locked bool, err error) {
	now := s.cfg.Now()
	byAccount, byAddress, err := s.cfg.Store.SignInFailures(ctx, normalize(account), address, now.Add(-s.cfg.Window))
	if err != nil {
		return 0, false, err
	}
	for _, f := range []struct {
		times []time.Time
		limit int
	}{{byAccount, s.cfg.AccountLimit}, {byAddress, s.cfg.AddressLimit}} {
		if n := len(f.times); n >= f.limit {
			// Once the (n-limit+1) oldest have aged out, limit-1 remain.
			if w := f.times[n-f.limit].Add(s.cfg.Window).Sub(now); w > wait {
				wait = w
			}
			locked = true
		}
	}
	if locked && wait < time.Second {
		wait = time.Second
	}
	return wait, locked, nil
}

// Fail records a failed sign-in for account from address.
func (s *Store) Fail(ctx context.Context, account, address string) error {
	if err := s.sweepNow(ctx); err != nil {
		return err
	}
	return s.cfg.Store.InsertSignInFailure(ctx, s.cfg.Now(), normalize(account), address)
}

func (s *Store) expired(ws store.WebSession, now time.Time) bool {
	return now.Sub(ws.LastSeenAt) >= s.cfg.IdleExpiry || now.Sub(ws.CreatedAt) >= s.cfg.MaxAge ||
		(!ws.GraceUntil.IsZero() && !now.Before(ws.GraceUntil))
}

func (s *Store) session(ws store.WebSession) Session {
	exp := ws.LastSeenAt.Add(s.cfg.IdleExpiry)
	if abs := ws.CreatedAt.Add(s.cfg.MaxAge); abs.Before(exp) {
		exp = abs
	}
	if !ws.GraceUntil.IsZero() && ws.GraceUntil.Before(exp) {
		exp = ws.GraceUntil
	}
	return Session{PersonID: ws.PersonID, CSRFToken: ws.CSRFToken, ExpiresAt: exp}
}

// idLen is the length of an id in unpadded base64url: 32 bytes.
var idLen = base64.RawURLEncoding.EncodedLen(32)

func randomToken() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("sessions: no randomness: %v", err)) // crypto/rand does not fail on supported systems
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// wellFormed spares the database a lookup of something that cannot be an id.
func wellFormed(id string) bool {
	if len(id) != idLen {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(id)
	return err == nil
}

func hashID(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:])
}

func normalize(account string) string { return strings.ToLower(strings.TrimSpace(account)) }
