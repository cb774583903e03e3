package app

import (
	"slices"
	"strings"
	"testing"
)

// TestImportRulesBookings: team mode's bookings (server/bookings) sit on the core floor beside
// the keys: they know the store, the identity in the context and the runtime's error types, and
// nothing of HTTP (gin), the router, a dialect, the core's Service, the desktop, metrics or
// cgo, so the router, the command line and whoever switches lanes can all use them.
func TestImportRulesBookings(t *testing.T) {
	cgo := cgoPackages(t)
	graph := moduleGraph(t)
	mustSee(t, graph, "server/bookings")
	allowed := []string{"server/store", "server/auth", "runtime/llm"}
	for _, p := range graph {
		if p.Rel != "server/bookings" {
			continue
		}
		for _, d := range p.Deps {
			if strings.HasPrefix(d, "github.com/gin-gonic/") || strings.HasPrefix(d, "github.com/prometheus/") ||
				strings.HasPrefix(d, "fyne.io/") || d == llamaPackage || cgo[d] {
				t.Errorf("server/bookings depends on %s; like the core, it must not", d)
			}
		}
		for _, imp := range p.Imports {
			if rel, ok := strings.CutPrefix(imp, module); ok && !slices.Contains(allowed, rel) {
				t.Errorf("server/bookings imports %s; of the module it may import only %v", imp, allowed)
			}
		}
	}
}
