package app

import (
	"strings"
	"testing"
)

// TestImportDesktopDrivesTeamThroughServices: the desktop controller drives team mode's lanes
// and bookings through the services the admin API calls (lanes.Manager, bookings.Service,
// people's audit log), never through an engine of its own: it depends on no engine kind
// (server/forward, runtime/supervise, runtime/llamacpp), which only app's lane factory builds.
func TestImportDesktopDrivesTeamThroughServices(t *testing.T) {
	engines := []string{"server/forward", "runtime/supervise", "runtime/llamacpp"}
	seen := map[string]bool{}
	for _, p := range moduleGraph(t) {
		if p.Rel != "app/desktop" {
			continue
		}
		for _, d := range p.Deps {
			rel := strings.TrimPrefix(d, module)
			for _, e := range engines {
				if rel == e {
					t.Errorf("app/desktop depends on %s; it drives lanes through lanes.Manager, whose factory (app) builds the engines", d)
				}
			}
			seen[rel] = true
		}
	}
	for _, need := range []string{"server/lanes", "server/bookings", "server/people"} {
		if !seen[need] {
			t.Errorf("app/desktop does not depend on %s: the rule above would be blind to how it reaches team mode", need)
		}
	}
}
