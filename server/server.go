// Package server is the HTTP front: one gin router carrying every dialect on one listener,
// plus the middleware they share (panic recovery, unknown routes, the connection's read and
// write deadlines, the guard: the Host check against DNS rebinding, CORS and API keys; then
// the policies: scheduling headers, rate limits and the non-streaming keep-alive), the keys
// routes (/v1/keys) and usage (/v1/usage). Whatever the router answers itself is rendered in the
// error shape of the dialect owning the request's path, by one table (dialects.go).
package server

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/superfluid/superfluid/server/anthropic"
	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/batches"
	"github.com/superfluid/superfluid/server/bookings"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/core/qos"
	"github.com/superfluid/superfluid/server/dialect"
	"github.com/superfluid/superfluid/server/forward"
	"github.com/superfluid/superfluid/server/lanes"
	"github.com/superfluid/superfluid/server/metrics"
	"github.com/superfluid/superfluid/server/ollama"
	"github.com/superfluid/superfluid/server/openai"
	"github.com/superfluid/superfluid/server/people"
	"github.com/superfluid/superfluid/server/prefixes"
	"github.com/superfluid/superfluid/server/quota"
	"github.com/superfluid/superfluid/server/web"
)

// Config tunes the HTTP layer.
type Config struct {
	// KeepAlive is the SSE keep-alive interval; 0 disables keep-alives.
	KeepAlive time.Duration
	// WriteTimeout bounds each write of a reply: a frame of a streamed reply (SSE and NDJSON),
	// a whole JSON reply, a chunk of a file download, a padding space. A client that stops
	// reading for longer is dropped; a stream's generation is stopped and its request recorded
	// as a client disconnect. 0 means DefaultWriteTimeout; negative, no bound.
	WriteTimeout time.Duration
	// ReadTimeout bounds each read of a request body: a client that sends part of a body and
	// then nothing for longer gets a 400 and its connection closed. 0 means
	// DefaultReadTimeout; negative, no bound.
	ReadTimeout time.Duration
	// TrustedProxies are the addresses and CIDR ranges of reverse proxies whose
	// X-Forwarded-For and X-Real-IP headers name the client (--trusted-proxies). Empty: the
	// headers are ignored and the client is the connection's peer, so no client can pick its
	// own rate-limit bucket.
	TrustedProxies []string
	// Fill-in-the-middle limits: per-client token bucket and generation deadline.
	CompletionBurst    int
	CompletionRate     float64
	CompletionDeadline time.Duration
	// Metrics, when set, counts every request and is served at GET /metrics and
	// /v1/metrics; nil serves no metrics.
	Metrics *metrics.Metrics
	// Keys authenticates requests and serves /v1/keys. nil, or a keyring with no key that
	// does not require one, leaves every route open (admin routes to loopback peers only).
	// /health never needs a key.
	Keys *auth.Keyring
	// Bind is the host the server listens on. When it is a loopback address, requests whose
	// Host header names anything but localhost, 127.0.0.1, [::1] or that host get 403 (DNS
	// rebinding). nil checks no Host.
	Bind *Bind
	// CORSOrigins are the browser origins (patterns, see auth.MatchOrigin) answered with CORS
	// headers, besides each key's own; nil is auth.DefaultOrigins. A request from any other
	// origin gets 403 and no CORS headers.
	CORSOrigins []string
	// Limits are the rate limits (limits.go); nil limits only what the keys' own limits say.
	Limits *Limits
	// AllowBatchInvariant lets requests ask for a lane that ticks alone with
	// x-superfluid-batch-invariant (--http-allow-batch-invariant); otherwise they get 400.
	AllowBatchInvariant bool
	// NonstreamKeepalive pads non-streaming generations with a space at this interval once
	// they are admitted (--nonstream-keepalive, keepalive.go); 0 pads nothing.
	NonstreamKeepalive time.Duration
	// Batches serves the Files and Batches APIs (/v1/files, /v1/batches); nil keeps no files.
	Batches *batches.Service
	// Lanes, in team mode, serves the lanes' admin routes (lanes_routes.go) over Devices.
	Lanes   *lanes.Manager
	Devices []lanes.Device
	// People serves team mode's admin API (/v1/admin/users, /v1/admin/audit, /v1/admin/keys;
	// people_routes.go); nil (single-user mode) serves none of it.
	People *people.Service
	// InstanceID names this server in forwarding (via.go); "" is forward.ProcessInstance().
	InstanceID string
	// Bookings serves team mode's bookings (/v1/bookings, /v1/admin/bookings); nil serves none.
	Bookings *bookings.Service
	// SharedPrefixes serves team mode's shared prefixes (/v1/admin/shared-prefixes, audited in
	// People's log); nil serves none.
	SharedPrefixes *prefixes.Service
	// Quota, in team mode, is the token quotas the admin API sets and /v1/usage reports (the
	// Limits enforce them); nil keeps none.
	Quota *quota.Service
	// Web, in team mode, is the browser API (/api/auth/..., /api/admin/..., /ui/: package web);
	// nil serves none, and those paths stay Ollama's unknown routes.
	Web *web.API
	// DefaultQoS is the scheduling class of a request that sends no x-superfluid-qos (Unset:
	// each endpoint's own default); nil takes the web API's setting (PUT /api/admin/settings)
	// when there is a web API.
	DefaultQoS func() qos.Class
}

// DefaultWriteTimeout is how long one frame of a streamed reply may take to write when the
// Config names no bound.
const DefaultWriteTimeout = 30 * time.Second

func init() { gin.SetMode(gin.ReleaseMode) }

// New returns the router serving svc in every dialect.
func New(cfg Config, svc *core.Service) http.Handler {
	r := gin.New()
	r.HandleMethodNotAllowed = true
	if err := r.SetTrustedProxies(cfg.TrustedProxies); err != nil {
		// The command line checks the list; a bad one from elsewhere trusts nobody.
		slog.Error("trusted proxies ignored", "err", err)
		_ = r.SetTrustedProxies(nil)
	}
	writeTimeout := bound(cfg.WriteTimeout, DefaultWriteTimeout)
	if cfg.DefaultQoS == nil && cfg.Web != nil {
		cfg.DefaultQoS = cfg.Web.DefaultQoS
	}
	if cfg.Web != nil {
		r.Use(markWeb) // first: every refusal on a web path is in the web API's shape
	}
	if cfg.Metrics != nil {
		r.Use(countRequests(cfg.Metrics)) // outside recovery, so it sees a panic's 500
	}
	r.Use(recovery)
	r.Use(deadlines(bound(cfg.ReadTimeout, DefaultReadTimeout), writeTimeout)) // before anything reads or writes
	r.Use(viaCheck(cmp.Or(cfg.InstanceID, forward.ProcessInstance())))
	r.Use(newGuard(cfg).handle)
	r.Use(policies(cfg)...) // scheduling headers, rate limits, keep-alive (qos.go)
	if cfg.Lanes != nil {
		r.Use(forwardOwnRoutes(svc)) // team mode: rerank and tokenize of a forwarded lane (forward_routes.go)
	}
	if cfg.Metrics != nil {
		h := gin.WrapH(cfg.Metrics.Handler())
		r.GET("/metrics", h)
		r.GET("/v1/metrics", h)
	}
	anthropicModels, anthropicModel := anthropic.ModelHandlers(svc) // /v1/models for Anthropic clients
	openai.Routes(r, svc, openai.Options{KeepAlive: cfg.KeepAlive, WriteTimeout: writeTimeout, CompletionBurst: cfg.CompletionBurst,
		CompletionRate: cfg.CompletionRate, CompletionDeadline: cfg.CompletionDeadline,
		AnthropicModels: anthropicModels, AnthropicModel: anthropicModel, AnthropicClient: anthropic.IsClient, Batches: cfg.Batches})
	ollama.Routes(r, svc, ollama.Options{WriteTimeout: writeTimeout})
	usageRoutes(r, svc, cfg.Quota)
	anthropic.Routes(r, svc, anthropic.Options{KeepAlive: cfg.KeepAlive, WriteTimeout: writeTimeout})
	if cfg.Keys != nil && cfg.People == nil {
		keyRoutes(r, cfg.Keys)
	}
	if cfg.Lanes != nil {
		laneRoutes(r, cfg.Lanes, cfg.Devices)
	}
	if cfg.People != nil { // team mode: the keys routes too, audited
		peopleRoutes(r, cfg.People, cfg.Keys, cfg.Quota)
	}
	if cfg.Bookings != nil {
		bookingRoutes(r, cfg.Bookings)
	}
	if cfg.SharedPrefixes != nil {
		prefixRoutes(r, cfg.SharedPrefixes, cfg.People)
	}
	if cfg.Web != nil {
		cfg.Web.Mount(r)
	}
	unknownRoute := func(c *gin.Context) {
		writeError(c, &dialect.Refusal{Status: http.StatusNotFound, Message: fmt.Sprintf("unknown route %s %s", c.Request.Method, c.Request.URL.Path)})
	}
	if cfg.Lanes != nil { // team mode: other POST /v1/* routes go to the lane's server (forward_routes.go)
		r.NoRoute(forwardOther(svc, unknownRoute))
	} else {
		r.NoRoute(unknownRoute)
	}
	r.NoMethod(func(c *gin.Context) {
		writeError(c, &dialect.Refusal{Status: http.StatusMethodNotAllowed, Message: fmt.Sprintf("%s is not allowed on %s", c.Request.Method, c.Request.URL.Path)})
	})
	return r
}

// bound is a Config timeout: 0 is def, negative is none (0).
func bound(d, def time.Duration) time.Duration {
	switch {
	case d == 0:
		return def
	case d < 0:
		return 0
	}
	return d
}

// countRequests counts each answered request by its route template (never the raw path, so
// the labels stay bounded), method and status.
func countRequests(m *metrics.Metrics) gin.HandlerFunc {
	return func(c *gin.Context) {
		c.Next()
		m.Request(c.FullPath(), c.Request.Method, c.Writer.Status())
	}
}

// recovery turns a handler panic into a 500 so one bad request never takes the server down.
// The panic's value and stack go to the log under an id; the client gets the dialect's generic
// 500 with that id only, since the value may hold anything (a prompt, a path, a key).
func recovery(c *gin.Context) {
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			id := panicID()
			slog.Error("handler panic", "id", id, "method", c.Request.Method, "path", c.Request.URL.Path, "panic", v, "stack", string(debug.Stack()))
			if !c.Writer.Written() {
				writeError(c, &dialect.Refusal{Status: http.StatusInternalServerError,
					Message: "internal error (id " + id + "; the server's log has the details under that id)"})
			}
			c.Abort()
		}
	}()
	c.Next()
}

// panicID names one panic in the log and in its 500.
func panicID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "panic-" + hex.EncodeToString(b)
}
