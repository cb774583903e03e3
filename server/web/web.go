// Package web is SlotServe's browser API (team mode, `serve --team`): JSON under /api on the
// main listener, cookie sessions (package sessions), the pages at /ui/, and the OpenAPI 3.1
// document of it all at /api/openapi.json with a viewer at /api/docs. It runs over the same
// services as the /v1/admin API (people, keys, bookings, lanes, quota, core, store); it holds
// no business logic of its own.
//
// # The registry
//
// Every route is registered through Handle (JSON in, JSON out) or Raw (streams, downloads,
// uploads), with a Meta saying who may call it. The registry is what the router mounts
// (Mount), what the OpenAPI document is generated from (openapi.go), and what the tests walk,
// so a route added anywhere is documented, guarded and tested the same way. Each handler
// returns an error; one function (WriteError) renders every refusal in OpenAI's shape:
//
//	{"error": {"message", "type", "code", "param"}}
//
// Before a handler runs, in order: the origin check (a request whose Origin is not this
// server's own, or whose Sec-Fetch-Site is cross-site or same-site, is 403 cross_origin), the
// caller (an API key the router's guard authenticated, else the sf_session cookie), the access
// (Public, SignedIn: 401 not_signed_in / session_expired; Admin: 403 admin_required), the CSRF
// token of a cookie session on POST, PUT, PATCH and DELETE (header X-CSRF-Token; 403
// csrf_failed), and the body: at most 1 MiB of JSON (413), decoded and validated against the
// schema generated from the In type (400 invalid_body with param naming the field). Unknown
// fields are ignored, as the official APIs do.
//
// # Schema tags
//
// The schema of a Go type comes from its fields: `json:"name"` (omitempty fields and pointers
// are optional unless required), and these tags:
//
//	required:"true"          the field must be present and not null
//	enum:"a,b,c"             one of these values (strings, or numbers for a number field)
//	minimum:"0" maximum:"9"  bounds of a number
//	minLength:"1" maxLength:"64"  bounds of a string's length (in characters)
//	maxItems:"100"           bound of an array's length
//	format:"date-time"       documented only
//	doc:"..."                the field's description
//
// A Meta.Query struct documents query parameters through its `form:"name"` fields (with the
// same tags); handlers read them with gin's binding.
package web

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/superfluid/superfluid/runtime/backends"
	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/bookings"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/lanes"
	"github.com/superfluid/superfluid/server/people"
	"github.com/superfluid/superfluid/server/quota"
	"github.com/superfluid/superfluid/server/runlog"
	"github.com/superfluid/superfluid/server/storage"
	"github.com/superfluid/superfluid/server/store"
	"github.com/superfluid/superfluid/server/web/sessions"
)

// Config is what the web API runs over. People, Keys and Sessions are required; the others may
// be nil where the server has none (then their routes answer what is there: no lanes, ...).
type Config struct {
	People   *people.Service
	Keys     *auth.Keyring
	Bookings *bookings.Service
	Lanes    *lanes.Manager
	Devices  []lanes.Device
	Quota    *quota.Service
	Core     *core.Service
	Store    *store.Store
	Sessions *sessions.Store
	// Now is the clock; nil is time.Now. It should be the Sessions' clock too.
	Now func() time.Time
	// IdleExpiry and MaxAge are the sessions' idle and absolute expiry, for the cookie's
	// lifetime (the Sessions enforce them); 0 is the sessions package's default.
	IdleExpiry, MaxAge time.Duration
	// Parts B and C add their fields below.

	// RuntimeLog is the server's recent log lines, for /api/admin/runtime/log (nil: the log
	// routes have no lines to show).
	RuntimeLog *runlog.Log
	// Backends are the runtimes this machine can run models on, for /api/admin/runtime.
	Backends []backends.Backend
	// defaultQoS is the team's default scheduling class (admin_settings.go; registerAdmin).
	defaultQoS *atomic.Int32
	// Storage is where models and files live besides the models folder (the storage routes);
	// nil: no storage routes.
	Storage *storage.Service
	// StorageCache is the folder an s3 storage's pulled models are kept in locally (their
	// loadable copy); "" refuses pulls into an s3 storage.
	StorageCache string
}

// API is the web API: its registry of routes. New builds it; Mount puts it on a router.
type API struct {
	cfg Config
	ops []*op
	// doc is the OpenAPI document, built at the first request for it (every route is
	// registered by then: New registers all of them).
	doc *lazyDoc
	// closers stop the API's background work (the pulls) at Close.
	closers []func()
	// attempts serializes the sign-in checks of one account and of one address (auth.go).
	attempts keyedMutex
	// closing is closed by Shutdown: the long-lived replies (the log stream) end.
	closing   chan struct{}
	closeOnce sync.Once
}

// Close stops the API's background work: running pulls are cancelled and waited for, so none
// writes into a manager or store that closes next. A nil API does nothing.
func (a *API) Close() {
	if a == nil {
		return
	}
	for _, c := range a.closers {
		c()
	}
}

// Shutdown ends the web API's long-lived replies (the live log stream), so a graceful
// http.Server.Shutdown, which cancels no request, is not held by them: register it with
// http.Server.RegisterOnShutdown. It may be called more than once.
func (a *API) Shutdown() { a.closeOnce.Do(func() { close(a.closing) }) }

// Access is who may call a route.
type Access int

// Accesses.
const (
	// Public: anyone (sign-in, the docs).
	Public Access = iota
	// SignedIn: a person signed in with a cookie session, or a request with an API key.
	SignedIn
	// Admin: an admin's session or an admin key.
	Admin
)

// Meta describes a route, for its checks and its documentation.
type Meta struct {
	Summary, Tag string
	Access       Access
	// Status is the success status; 0 is 200 (204 when Out is NoBody).
	Status int
	// Query is a struct value whose `form:"x"` fields document the query parameters.
	Query any
	// Produces is the content type of a Raw route's success reply ("text/event-stream",
	// "application/octet-stream", "text/plain", "text/html"); "" is JSON.
	Produces string
	// Consumes is the content type a Raw route reads ("application/octet-stream"); "" none.
	Consumes string
	// Hidden keeps the route out of the OpenAPI document (the pages, the viewer).
	Hidden bool
}

// Caller is who sent a request: a person (the zero Person for a key of nobody, such as
// --api-key) and, for a request with an API key, the key's identity.
type Caller struct {
	Person people.Person
	// Key is the API key's identity; nil for a cookie session.
	Key *auth.Identity
	// Session is set for a cookie session ("" for a key): the session's CSRF token, which
	// names the session across its rotations.
	Session string
}

// Admin reports whether the caller may use the admin routes.
func (c Caller) Admin() bool {
	if c.Key != nil {
		return c.Key.Admin
	}
	return c.Person.Role == people.RoleAdmin
}

// signedIn reports whether there is a caller at all.
func (c Caller) signedIn() bool { return c.Key != nil || c.Person.ID != "" }

// Request is what a handler gets: the request's context (carrying the caller's identity for
// the services: auth.FromContext), the caller, the decoded body and gin's context (path
// params, query, headers; a Raw handler writes its reply through it).
type Request[In any] struct {
	Ctx    context.Context
	Caller Caller
	Body   In
	Gin    *gin.Context
}

// Param is the path parameter name (":name" in the route).
func (r *Request[In]) Param(name string) string { return strings.TrimSpace(r.Gin.Param(name)) }

// NoBody is the In of a route that reads no body, and the Out of one that answers 204.
type NoBody struct{}

// op is one registered route.
type op struct {
	method, path string
	meta         Meta
	in, out      reflect.Type // nil: none
	handler      gin.HandlerFunc
}

// New returns the web API over cfg, every route registered.
func New(cfg Config) *API {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.IdleExpiry <= 0 {
		cfg.IdleExpiry = sessions.DefaultIdleExpiry
	}
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = sessions.DefaultMaxAge
	}
	a := &API{cfg: cfg, doc: &lazyDoc{}, closing: make(chan struct{})}
	if cfg.People != nil && cfg.Sessions != nil {
		cfg.People.OnDisable(a.endSessionsOfDisabled) // chained after the bookings' hook
	}
	a.authRoutes()
	a.profileRoutes()
	a.ownKeyRoutes()
	a.ownBookingRoutes()
	a.laneRoutes()
	a.usageRoutes()
	// Parts B (admin) and C (storage, catalog) register theirs here.
	registerAdmin(a)
	registerStorage(a)
	registerCatalog(a)
	a.docRoutes()
	a.pageRoutes()
	return a
}

// Mount puts every registered route on r (the server's root router).
func (a *API) Mount(r gin.IRouter) {
	for _, o := range a.ops {
		r.Handle(o.method, o.path, o.handler)
	}
}

// Handle registers a JSON route: fn gets the decoded, validated In and its Out is the reply
// (with m.Status; NoBody answers 204). path uses gin's syntax (":id").
func Handle[In, Out any](a *API, method, path string, m Meta, fn func(*Request[In]) (Out, error)) {
	in, out := reflect.TypeFor[In](), reflect.TypeFor[Out]()
	noIn, noOut := in == reflect.TypeFor[NoBody](), out == reflect.TypeFor[NoBody]()
	status := m.Status
	if status == 0 {
		status = http.StatusOK
		if noOut {
			status = http.StatusNoContent
		}
	}
	m.Status = status
	var schema *Schema
	if !noIn {
		schema = schemaOf(in)
	}
	o := &op{method: method, path: path, meta: m}
	if !noIn {
		o.in = in
	}
	if !noOut {
		o.out = out
	}
	o.handler = func(c *gin.Context) {
		caller, err := a.admit(c, m.Access)
		if err != nil {
			WriteError(c, err)
			return
		}
		req := &Request[In]{Ctx: c.Request.Context(), Caller: caller, Gin: c}
		if !noIn {
			if err := decodeBody(c.Request, schema, &req.Body); err != nil {
				WriteError(c, err)
				return
			}
		}
		res, err := fn(req)
		if err != nil {
			WriteError(c, err)
			return
		}
		if noOut {
			c.Status(status)
			return
		}
		c.JSON(status, res)
	}
	a.add(o)
}

// Raw registers a route that writes its own reply (SSE, a download) or reads its own body (an
// upload): fn writes through r.Gin; an error it returns before writing is rendered as usual.
func Raw(a *API, method, path string, m Meta, fn func(*Request[NoBody]) error) {
	if m.Status == 0 {
		m.Status = http.StatusOK
	}
	o := &op{method: method, path: path, meta: m}
	o.handler = func(c *gin.Context) {
		caller, err := a.admit(c, m.Access)
		if err != nil {
			WriteError(c, err)
			return
		}
		if err := fn(&Request[NoBody]{Ctx: c.Request.Context(), Caller: caller, Gin: c}); err != nil {
			if c.Writer.Written() {
				_ = c.Error(err) // the reply is under way: nothing can be said any more
				return
			}
			WriteError(c, err)
		}
	}
	a.add(o)
}

func (a *API) add(o *op) {
	for _, p := range a.ops {
		if p.method == o.method && p.path == o.path {
			panic(fmt.Sprintf("web: route %s %s registered twice", o.method, o.path))
		}
	}
	a.ops = append(a.ops, o)
}

// prefixes are the paths the web API owns on the main listener (the contract's list): Owns
// answers for them, the router gives them the web error shape and the guard lets them through
// without a key in team mode.
var prefixes = []string{"/api/auth/", "/api/admin/", "/api/profile", "/api/keys", "/api/bookings", "/api/lanes",
	"/api/usage", "/api/storage", "/api/catalog", "/api/docs", "/api/openapi.json", "/ui/"}

// Owns reports whether a request to path belongs to the web API.
func Owns(path string) bool {
	if path == "/ui" {
		return true
	}
	for _, p := range prefixes {
		if strings.HasPrefix(path, p) {
			if strings.HasSuffix(p, "/") || len(path) == len(p) || path[len(p)] == '/' {
				return true
			}
		}
	}
	return false
}
