package app

import (
	"strings"
	"testing"
)

// TestImportRulesLanes: team mode's lanes (server/lanes) sit on the core (they hand it a
// core.Router), so the arrow runs lanes → core and never back; the dialects reach lanes only
// through the core's Router seam; and lanes, like the core, know nothing of HTTP, the desktop,
// metrics or cgo. The engines a lane serves (forwarding, supervised commands) and the bookings
// come in from app through lanes.EngineFactory and lanes.Reservations, never as imports.
func TestImportRulesLanes(t *testing.T) {
	const lanes = module + "server/lanes"
	cgo := cgoPackages(t)
	graph := moduleGraph(t)
	mustSee(t, graph, "server/lanes", "server/core", "server/openai", "server/anthropic", "server/ollama")
	for _, p := range graph {
		switch {
		case p.Rel == "server/core" || strings.HasPrefix(p.Rel, "server/core/"):
			if d, ok := hasPrefix(p.Deps, lanes); ok {
				t.Errorf("%s depends on %s; the core knows lanes only as its Router interface", p.Rel, d)
			}
		case p.Rel == "server/openai" || p.Rel == "server/anthropic" || p.Rel == "server/ollama":
			if d, ok := hasPrefix(p.Deps, lanes); ok {
				t.Errorf("%s depends on %s; a dialect resolves models through the core (its Router), never lanes", p.Rel, d)
			}
		case p.Rel == "server/lanes":
			for _, d := range p.Deps {
				if strings.HasPrefix(d, "github.com/gin-gonic/") || strings.HasPrefix(d, "github.com/prometheus/") ||
					strings.HasPrefix(d, "fyne.io/") || d == llamaPackage || cgo[d] {
					t.Errorf("server/lanes depends on %s; like the core, it must not", d)
				}
			}
			for _, other := range []string{"server/openai", "server/anthropic", "server/ollama", "server/forward", "server/bookings",
				"server/command", "app", "tray"} {
				if d, ok := hasPrefix(p.Deps, module+other); ok && (d == module+other || strings.HasPrefix(d, module+other+"/")) {
					t.Errorf("server/lanes depends on %s; engines and bookings come in through EngineFactory and Reservations", d)
				}
			}
		}
	}
}
