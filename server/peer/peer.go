// Package peer tells who sent a request: admin routes (model load, unload, delete, pull) answer
// only this machine until keys exist.
package peer

import (
	"net"
	"net/http"
	"net/netip"
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

// AdminOnlyMessage is what a refused admin request is told.
const AdminOnlyMessage = "model management (load, unload, delete, pull, copy) is allowed only from this machine until API keys are configured"
