package auth

import (
	"net/http"
	"net/url"
	"strings"
)

// CrossOrigin reports whether r was sent by a web page of another origin than this server's:
// an Origin header that does not name the host the request was sent to, or a Sec-Fetch-Site
// other than same-origin and none (what a browser sends with a plain GET from a page, which
// carries no Origin). same-site is another origin too: a page on another port of this host
// (http://localhost:3000 asking http://localhost:8453) is the same site, ports not counting.
func CrossOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && !strings.EqualFold(site, "same-origin") && !strings.EqualFold(site, "none") {
		return true
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return false
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return true // "null" (a sandboxed page, a file) or garbage: not this server
	}
	return !strings.EqualFold(u.Host, r.Host)
}

// Trusted reports whether r may be shown what only the machine's owner should see, such as a
// model's absolute path: an admin key, or without keys a caller on this machine that is not a
// web page (the test the admin routes make, see Admin).
func Trusted(r *http.Request) bool {
	if ok, _ := Admin(r); !ok {
		return false
	}
	if _, keyed := FromContext(r.Context()); keyed {
		return true
	}
	return !FromBrowser(r)
}
