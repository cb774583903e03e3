package auth

import (
	"fmt"
	"strings"
)

// DefaultOrigins are the browser origins the server answers when --cors-origins adds none:
// pages served from this machine (localhost, 127.0.0.1 and [::1], http or https, any port).
var DefaultOrigins = []string{
	"http://localhost", "http://localhost:*", "https://localhost", "https://localhost:*",
	"http://127.0.0.1", "http://127.0.0.1:*", "https://127.0.0.1", "https://127.0.0.1:*",
	"http://[::1]", "http://[::1]:*", "https://[::1]", "https://[::1]:*",
}

// MatchOrigin reports whether a browser's Origin header matches pattern. A pattern is an
// origin (scheme://host[:port], compared without regard to case), "*" (every origin), or an
// origin with one "*": "http://localhost:*" is any port (digits only), "https://*.example.com"
// any subdomain and "vscode-webview://*" any host (letters, digits, dots and dashes only).
// The origin "null" (sandboxed frames, file:// pages) matches only "*".
func MatchOrigin(pattern, origin string) bool {
	if pattern == "*" {
		return origin != ""
	}
	pattern, origin = strings.ToLower(pattern), strings.ToLower(origin)
	star := strings.IndexByte(pattern, '*')
	if star < 0 {
		return pattern == origin
	}
	prefix, suffix := pattern[:star], pattern[star+1:]
	if len(origin) <= len(prefix)+len(suffix) || !strings.HasPrefix(origin, prefix) || !strings.HasSuffix(origin, suffix) {
		return false
	}
	middle := origin[len(prefix) : len(origin)-len(suffix)]
	port := strings.HasSuffix(prefix, ":") && suffix == ""
	for _, r := range middle {
		switch {
		case r >= '0' && r <= '9':
		case port:
			return false
		case r >= 'a' && r <= 'z', r == '.', r == '-':
		default:
			return false
		}
	}
	return true
}

// CheckOrigin validates an origin pattern from the command line or a policy file and returns
// it without a trailing slash.
func CheckOrigin(pattern string) (string, error) {
	p := strings.TrimSuffix(strings.TrimSpace(pattern), "/")
	if p == "*" {
		return p, nil
	}
	scheme, rest, ok := strings.Cut(p, "://")
	switch {
	case !ok || scheme == "" || rest == "":
		return "", fmt.Errorf("origin %q: want scheme://host[:port], e.g. https://app.example.com or http://localhost:*", pattern)
	case strings.ContainsAny(rest, "/?#@ "):
		return "", fmt.Errorf("origin %q: an origin has no path, query or user: want scheme://host[:port]", pattern)
	case strings.Count(p, "*") > 1:
		return "", fmt.Errorf("origin %q: at most one * (a port, a subdomain or a host)", pattern)
	}
	return p, nil
}
