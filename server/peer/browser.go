package peer

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/superfluid/superfluid/server/auth"
)

// CrossOrigin reports whether r was sent by a web page of another origin than this server's:
// an Origin header that does not name the host the request was sent to, or Sec-Fetch-Site:
// cross-site (what a browser sends with a plain GET from a page, which carries no Origin).
func CrossOrigin(r *http.Request) bool {
	if strings.EqualFold(r.Header.Get("Sec-Fetch-Site"), "cross-site") {
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

// FromBrowser reports whether r was sent by a web page: it carries an Origin header, or a
// Sec-Fetch-Site other than "none" (which is the user typing the address).
func FromBrowser(r *http.Request) bool {
	site := r.Header.Get("Sec-Fetch-Site")
	return r.Header.Get("Origin") != "" || (site != "" && !strings.EqualFold(site, "none"))
}

// Trusted reports whether r may be shown what only the machine's owner should see, such as a
// model's absolute path: an admin key, or without keys a caller on this machine that is not a
// web page (the test the admin routes make, see Admin).
func Trusted(r *http.Request) bool {
	if ok, _ := Admin(r); !ok {
		return false
	}
	if _, keyed := auth.FromContext(r.Context()); keyed {
		return true
	}
	return !FromBrowser(r)
}
