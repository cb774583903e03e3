package server

import (
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/gin-gonic/gin"

	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/dialect"
	"github.com/superfluid/superfluid/server/web"
)

// Bind is the host the server listens on, as the Host check reads it. The desktop app moves
// the server between starts, so it can change while the handler lives.
type Bind struct{ host atomic.Pointer[string] }

// NewBind returns a Bind holding host.
func NewBind(host string) *Bind {
	b := &Bind{}
	b.Set(host)
	return b
}

// Set changes the host.
func (b *Bind) Set(host string) { b.host.Store(&host) }

// Host is the host the server listens on.
func (b *Bind) Host() string { return *b.host.Load() }

// corsAllowHeaders are the request headers a browser may send cross-origin.
const corsAllowHeaders = "Authorization, Content-Type, X-Api-Key, Anthropic-Version, Anthropic-Beta, X-Superfluid-Qos, " +
	"X-Superfluid-Batch-Invariant, OpenAI-Organization, OpenAI-Project, X-Stainless-Arch, X-Stainless-Lang, X-Stainless-Os, " +
	"X-Stainless-Package-Version, X-Stainless-Retry-Count, X-Stainless-Runtime, X-Stainless-Runtime-Version, X-Stainless-Timeout"

// corsExposeHeaders are the response headers a page may read.
const corsExposeHeaders = "Retry-After, X-Superfluid-Warm, X-Superfluid-Keepalive, Request-Id"

// guard is the front door every request passes before any handler reads its body: the Host
// check (DNS rebinding), CORS, then the API key.
type guard struct {
	keys    *auth.Keyring
	bind    *Bind
	origins []string
	// missingCode is the code of a request without a key: team mode's spec names it
	// missing_api_key; superfluid's own spec, invalid_api_key.
	missingCode string
	// web: the router serves the web API, whose paths need no key (its sessions decide) and
	// get no CORS headers (it answers its own origin only).
	web bool
}

func newGuard(cfg Config) *guard {
	g := &guard{keys: cfg.Keys, bind: cfg.Bind, origins: cfg.CORSOrigins, missingCode: "invalid_api_key", web: cfg.Web != nil}
	if cfg.People != nil {
		g.missingCode = "missing_api_key"
	}
	if g.origins == nil {
		g.origins = auth.DefaultOrigins
	}
	return g
}

func (g *guard) handle(c *gin.Context) {
	r := c.Request
	c.Header("Vary", "Origin")
	// DNS rebinding: a page on evil.example whose name now resolves to 127.0.0.1 reaches a
	// loopback server with Host: evil.example. Only this machine's own names are answered.
	if g.bind != nil {
		if bound := g.bind.Host(); auth.LoopbackHost(bound) && !allowedHost(r.Host, bound) {
			refuse(c, http.StatusForbidden, "host_not_allowed", "the Host header "+quote(r.Host)+" does not name this server; "+
				"a server bound to this machine answers only localhost, 127.0.0.1, [::1] and its bound address "+
				"(a web page may be trying DNS rebinding; to serve other names, bind another address with --host and set --api-key)")
			return
		}
	}
	origin := r.Header.Get("Origin")
	webPath := g.web && web.Owns(r.URL.Path)
	if origin != "" && !webPath {
		if !g.allowedOrigin(origin) {
			// No CORS headers: the browser keeps the answer from the page. A preflight gets a bare
			// 403; a request sent without one (a "simple" POST) is refused before it runs.
			if isPreflight(r) {
				c.AbortWithStatus(http.StatusForbidden)
				return
			}
			refuse(c, http.StatusForbidden, "origin_not_allowed", "requests from web pages of "+quote(origin)+
				" are not allowed; start the server with --cors-origins "+origin+" to allow them")
			return
		}
		h := c.Writer.Header()
		h.Set("Access-Control-Allow-Origin", origin) // the origin itself, never "*"
		h.Set("Access-Control-Expose-Headers", corsExposeHeaders)
		if isPreflight(r) {
			h.Set("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS")
			h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
			h.Set("Access-Control-Max-Age", "600")
			c.AbortWithStatus(http.StatusNoContent)
			return
		}
	}
	if g.keys.Enabled() && r.URL.Path != "/health" {
		key := presentedKey(r)
		if key == "" && webPath {
			c.Next() // a browser's session: the web API checks its cookie
			return
		}
		if key == "" {
			c.Header("WWW-Authenticate", `Bearer realm="superfluid"`)
			refuse(c, http.StatusUnauthorized, g.missingCode, "no API key: send it as Authorization: Bearer KEY or x-api-key: KEY")
			return
		}
		id, ok := g.keys.Authenticate(key)
		if !ok {
			if alt := r.Header.Get("X-Api-Key"); alt != "" && alt != key {
				id, ok = g.keys.Authenticate(alt) // both headers sent: either may hold the key
			}
		}
		if !ok {
			c.Header("WWW-Authenticate", `Bearer realm="superfluid", error="invalid_token"`)
			refuse(c, http.StatusUnauthorized, "invalid_api_key", "incorrect API key; superfluid keys list shows the keys (a key is shown only when it is created)")
			return
		}
		if !webPath && !id.AllowsOrigin(origin) {
			refuse(c, http.StatusForbidden, "origin_not_allowed", "the API key "+quote(id.Name)+" may not be used from web pages of "+quote(origin))
			return
		}
		c.Request = r.WithContext(auth.NewContext(r.Context(), id))
	}
	c.Next()
}

// allowedOrigin reports whether CORS answers origin: the server's list or an active key's.
func (g *guard) allowedOrigin(origin string) bool {
	return slices.ContainsFunc(g.origins, func(p string) bool { return auth.MatchOrigin(p, origin) }) || g.keys.KeyOrigin(origin)
}

func isPreflight(r *http.Request) bool {
	return r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != ""
}

// presentedKey is the key a request sends: Authorization: Bearer <key>, else x-api-key.
func presentedKey(r *http.Request) string {
	if a := r.Header.Get("Authorization"); len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		return strings.TrimSpace(a[7:])
	}
	return strings.TrimSpace(r.Header.Get("X-Api-Key"))
}

// allowedHost reports whether a Host header names a server bound to the loopback address
// bound: localhost, 127.0.0.1, [::1] or bound itself, with any port. An empty Host (HTTP/1.0)
// is not from a browser and passes.
func allowedHost(host, bound string) bool {
	if host == "" {
		return true
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	switch host {
	case "localhost", "127.0.0.1", "::1":
		return true
	}
	return host == strings.ToLower(strings.Trim(bound, "[]"))
}

// refuse answers a request the guard stops in the shape of the dialect its path belongs to
// (dialects.go) and ends its chain.
func refuse(c *gin.Context, status int, code, msg string) {
	writeError(c, &dialect.Refusal{Status: status, Code: code, Message: msg})
	c.Abort()
}

// quote shows a header's value in a message, bounded and printable.
func quote(s string) string {
	if len(s) > 100 {
		s = s[:100] + "..."
	}
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return '?'
		}
		return r
	}, `"`+s+`"`)
}
