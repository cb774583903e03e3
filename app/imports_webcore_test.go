package app

import (
	"strings"
	"testing"
)

// TestImportRulesWebcore: the web API's sessions (server/web/sessions) are a core-floor
// package: no HTTP framework, desktop, metrics or cgo, and of the module only the store. The
// web API (server/web) is on the router's floor: it runs over the services, never a dialect
// or the router itself, nor a model source; only the router (server) and app import it.
func TestImportRulesWebcore(t *testing.T) {
	const web = module + "server/web"
	cgo := cgoPackages(t)
	graph := moduleGraph(t)
	mustSee(t, graph, "server/web", "server/web/sessions", "server")
	for _, p := range graph {
		switch {
		case p.Rel == "server/web/sessions":
			for _, d := range p.Deps {
				if strings.HasPrefix(d, "github.com/gin-gonic/") || strings.HasPrefix(d, "github.com/prometheus/") ||
					strings.HasPrefix(d, "fyne.io/") || d == llamaPackage || cgo[d] {
					t.Errorf("server/web/sessions depends on %s; like the core, it must not", d)
				}
			}
			for _, d := range p.Imports {
				if strings.HasPrefix(d, module) && d != module+"server/store" {
					t.Errorf("server/web/sessions imports %s; of the module it uses only server/store", d)
				}
			}
		case p.Rel == "server/web":
			for _, d := range p.Deps {
				for _, banned := range []string{"server/openai", "server/anthropic", "server/ollama", "runtime/models/hf", "tray", "app"} {
					if d == module+banned || strings.HasPrefix(d, module+banned+"/") {
						t.Errorf("server/web depends on %s; it runs over the services, not a dialect, a source or the app", d)
					}
				}
				if d == module+"server" || strings.HasPrefix(d, "fyne.io/") || d == llamaPackage {
					t.Errorf("server/web depends on %s", d)
				}
			}
		case p.Rel != "server" && p.Rel != "app" && !strings.HasPrefix(p.Rel, "app/") && !strings.HasPrefix(p.Rel, "server/web"):
			if d, ok := hasPrefix(p.Imports, web); ok && (d == web || strings.HasPrefix(d, web+"/")) {
				t.Errorf("%s imports %s; only the router (server) and app mount the web API", p.Rel, d)
			}
		}
	}
}
