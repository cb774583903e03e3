package websession

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
)

// httpError is a refusal of the transport itself, rendered in OpenAI's error shape (the
// method calls' own errors travel in RPC frames instead, rpc.go).
type httpError struct {
	status        int
	code, message string
}

func (e *httpError) Error() string { return e.message }

var (
	errNoToken     = &httpError{http.StatusUnauthorized, "invalid_token", "a web token is required: Authorization: Bearer <token> (the web-token file in the data dir)"}
	errWrongHost   = &httpError{http.StatusForbidden, "invalid_host", "the Host must be this listener's loopback name (127.0.0.1, localhost or [::1])"}
	errCrossOrigin = &httpError{http.StatusForbidden, "cross_origin", "cross-origin requests are refused: only this listener's own page may call it"}
	errTooLarge    = &httpError{http.StatusRequestEntityTooLarge, "body_too_large", fmt.Sprintf("the body is over %d bytes", MaxFrame)}
	errTooMany     = &httpError{http.StatusServiceUnavailable, "too_many_sockets", "too many WebSockets are open"}
)

// errorType is OpenAI's type for a status.
func errorType(status int) string {
	switch {
	case status == http.StatusUnauthorized:
		return "authentication_error"
	case status == http.StatusForbidden:
		return "permission_error"
	case status == http.StatusNotFound:
		return "not_found_error"
	case status == http.StatusTooManyRequests:
		return "rate_limit_error"
	case status >= 500:
		return "server_error"
	}
	return "invalid_request_error"
}

// writeError is the one renderer of transport errors.
func writeError(w http.ResponseWriter, err error) {
	var he *httpError
	if !errors.As(err, &he) {
		he = &httpError{http.StatusInternalServerError, "server_error", err.Error()}
	}
	writeJSON(w, he.status, map[string]any{"error": map[string]any{
		"message": he.message, "type": errorType(he.status), "code": he.code, "param": nil}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// loopbackName reports whether host (no port) names this machine: a loopback IP or localhost.
func loopbackName(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// CheckAddress refuses a --web address that is not loopback: the transport carries an
// unauthenticated-looking page and a local token, never meant for the network.
func CheckAddress(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--web %q: want 127.0.0.1:PORT (%v)", addr, err)
	}
	if !loopbackName(host) {
		return fmt.Errorf("--web %q: the browser transport listens on loopback only (127.0.0.1:PORT, localhost:PORT or [::1]:PORT)", addr)
	}
	return nil
}

// Listen checks addr (CheckAddress) and listens on it.
func Listen(addr string) (net.Listener, error) {
	if err := CheckAddress(addr); err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--web: listen on %s: %w", addr, err)
	}
	return l, nil
}

// localPort is the port the request arrived on ("" when unknown).
func localPort(r *http.Request) string {
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		if _, port, err := net.SplitHostPort(a.String()); err == nil {
			return port
		}
	}
	return ""
}

// ownAuthority reports whether hostport names this listener: a loopback name and, when the
// port is known, this port. A page on another local port is another origin.
func ownAuthority(hostport, port string) bool {
	host, p, err := net.SplitHostPort(hostport)
	if err != nil {
		host, p = hostport, "80"
	}
	return loopbackName(host) && (port == "" || p == port)
}

// checkHostOrigin refuses DNS rebinding (a Host that is not a loopback name) and other sites'
// pages (an Origin, or Sec-Fetch-Site, that is not this listener).
func checkHostOrigin(r *http.Request) error {
	port := localPort(r)
	if !ownAuthority(r.Host, port) {
		return errWrongHost
	}
	if o := r.Header.Get("Origin"); o != "" {
		rest, ok := strings.CutPrefix(o, "http://")
		if !ok || strings.ContainsAny(rest, "/?#@") || !ownAuthority(rest, port) {
			return errCrossOrigin
		}
	}
	if s := r.Header.Get("Sec-Fetch-Site"); s == "cross-site" || s == "same-site" {
		return errCrossOrigin
	}
	return nil
}

// bearer is the key of an Authorization: Bearer header, or x-api-key.
func bearer(r *http.Request) string {
	if v, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return strings.TrimSpace(v)
	}
	return r.Header.Get("X-Api-Key")
}

// allowed reports whether cred is the token (constant time) or an admin API key.
func (h *Handler) allowed(cred string) bool {
	if cred == "" {
		return false
	}
	if h.cfg.Token != "" && subtle.ConstantTimeCompare([]byte(cred), []byte(h.cfg.Token)) == 1 {
		return true
	}
	return h.cfg.AdminKey != nil && h.cfg.AdminKey(cred)
}

// authed wraps a route that needs the token and a body of at most MaxFrame.
func (h *Handler) authed(next http.HandlerFunc) http.Handler { return h.authedUpTo(MaxFrame, next) }

// authedUpTo is authed with a body of at most limit bytes (an attachment's upload).
func (h *Handler) authedUpTo(limit int64, next http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !h.allowed(bearer(r)) {
			writeError(w, errNoToken)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, limit)
		// Close ends these calls too (a chat over /web/stream, a load): http.Server.Shutdown
		// waits for them without cancelling their context (rev20b).
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		stop := context.AfterFunc(h.base, cancel)
		defer stop()
		next(w, r.WithContext(ctx))
	})
}

// contextWithCancel is the request's context with a cancel of its own (a failed write ends the
// generation before the client's disconnect is noticed).
func contextWithCancel(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithCancel(r.Context())
}
