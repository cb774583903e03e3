package auth

// Who sent a request, and whether it may use the admin routes (model load, unload, delete, pull,
// copy and the keys routes): with API keys, an admin key decides; without them, only this
// machine (a loopback peer) may.

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// IsLoopback reports whether the request came from this machine (a loopback address).
func IsLoopback(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	addr, err := netip.ParseAddr(host)
	return err == nil && addr.Unmap().IsLoopback()
}

// LoopbackHost reports whether a server bound to host answers only this machine: localhost or
// a loopback address. "" and unspecified addresses (0.0.0.0, ::) bind every interface.
func LoopbackHost(host string) bool {
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	addr, err := netip.ParseAddr(host)
	return err == nil && addr.Unmap().IsLoopback()
}

// FromBrowser reports whether r was sent by a web page: it carries an Origin header, or
// Sec-Fetch-Site says another site (or another port of this one) made it. A page on any
// localhost port reaches a loopback server from a loopback address, so being on this machine
// proves nothing about such a request.
func FromBrowser(r *http.Request) bool {
	if r.Header.Get("Origin") != "" {
		return true
	}
	switch strings.ToLower(r.Header.Get("Sec-Fetch-Site")) {
	case "cross-site", "same-site":
		return true
	}
	return false
}

// Proxied reports whether r came through a reverse proxy: it carries a header proxies add
// (X-Forwarded-For, X-Real-IP, Forwarded, Via). A proxy on this machine makes every client it
// forwards a loopback peer, whether or not --trusted-proxies names it, so being on this machine
// proves nothing about such a request either. A local program that sends one only loses the
// admin routes.
func Proxied(r *http.Request) bool {
	for _, h := range []string{"X-Forwarded-For", "X-Real-Ip", "Forwarded", "Via"} {
		if r.Header.Get(h) != "" {
			return true
		}
	}
	return false
}

// Admin reports whether r may use the admin routes and, when it may not, what to tell it. With
// API keys configured the request's key decides (the server's middleware put its identity in
// the context); without them a loopback peer may, unless a web page sent the request or a
// proxy forwarded it, and no other. RemoteAddr is the TCP peer itself: X-Forwarded-For and the like are ignored on
// purpose, since any client can send them.
func Admin(r *http.Request) (ok bool, refusal string) {
	if id, keyed := FromContext(r.Context()); keyed {
		if id.Admin {
			return true, ""
		}
		return false, NotAdminMessage
	}
	if !IsLoopback(r) {
		return false, AdminOnlyMessage
	}
	if FromBrowser(r) {
		return false, BrowserMessage
	}
	if Proxied(r) {
		return false, ProxiedMessage
	}
	return true, ""
}

// AdminOnlyMessage is what a refused admin request is told when the server has no keys.
const AdminOnlyMessage = "model management (load, unload, delete, pull, copy) is allowed only from this machine until API keys are configured (--api-key, --key-policy or superfluid keys create)"

// BrowserMessage is what a refused admin request from a web page is told when the server has
// no keys.
const BrowserMessage = "model management (load, unload, delete, pull, copy) and the keys routes are not allowed from web pages without an admin API key: any page served from this machine could otherwise use them; create one (superfluid keys create NAME --admin) and send it"

// ProxiedMessage is what a refused admin request forwarded by a reverse proxy is told when the
// server has no keys.
const ProxiedMessage = "model management (load, unload, delete, pull, copy) and the keys routes are not allowed through a reverse proxy without an admin API key: " +
	"every client of a proxy on this machine arrives from this machine; create one (superfluid keys create NAME --admin) and send it"

// NotAdminMessage is what a request with a key that is not an admin key is told on an admin route.
const NotAdminMessage = "this API key is not an admin key; model management (load, unload, delete, pull, copy) and the keys routes need one (superfluid keys create NAME --admin)"
