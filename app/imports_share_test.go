package app

import (
	"strings"
	"testing"
)

// TestImportRulesSharedPrefixes: team mode's shared prefixes (server/prefixes) are a core-floor
// package: no HTTP, desktop, metrics or cgo; of the module only the store (who changed what
// reaches the people's audit log through prefixes.By, so package people stays the router's and
// app's). The core sees them only as its own core.SharedPrefixes, never by importing them, and
// no dialect imports them.
func TestImportRulesSharedPrefixes(t *testing.T) {
	const prefixes = module + "server/prefixes"
	cgo := cgoPackages(t)
	graph := moduleGraph(t)
	mustSee(t, graph, "server/prefixes", "server/core", "server/openai", "server")
	for _, p := range graph {
		if p.Rel == "server/prefixes" {
			for _, d := range p.Deps {
				if strings.HasPrefix(d, "github.com/gin-gonic/") || strings.HasPrefix(d, "github.com/prometheus/") ||
					strings.HasPrefix(d, "fyne.io/") || d == llamaPackage || cgo[d] {
					t.Errorf("server/prefixes depends on %s; like the core, it must not", d)
				}
			}
			for _, d := range p.Imports {
				if strings.HasPrefix(d, module) && d != module+"server/store" {
					t.Errorf("server/prefixes imports %s; of the module it uses only server/store", d)
				}
			}
			continue
		}
		if p.Rel != "server" && p.Rel != "app" && !strings.HasPrefix(p.Rel, "app/") {
			if d, ok := hasPrefix(p.Imports, prefixes); ok {
				t.Errorf("%s imports %s; only the router (server) and app use the shared prefixes (the core through core.SharedPrefixes)", p.Rel, d)
			}
		}
	}
}
