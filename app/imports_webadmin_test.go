package app

import (
	"strings"
	"testing"
)

// TestImportRulesWebAdmin: the admin side's helpers stay below the web API. server/runlog (the
// runtime log's ring, handed to the web API by app) imports nothing of the module;
// server/loadhistory (the load history) is a core-floor package over the core's model events,
// the lanes and the store: no gin, no HTTP package of the module (server, server/web, a
// dialect), no cgo. Only the web API and app use either.
func TestImportRulesWebAdmin(t *testing.T) {
	cgo := cgoPackages(t)
	graph := moduleGraph(t)
	mustSee(t, graph, "server/runlog", "server/loadhistory", "server/web")
	allowed := map[string]bool{module + "server/core": true, module + "server/lanes": true, module + "server/store": true}
	for _, p := range graph {
		switch p.Rel {
		case "server/runlog":
			if d, ok := hasPrefix(p.Imports, module); ok {
				t.Errorf("server/runlog imports %s; it imports nothing of the module", d)
			}
		case "server/loadhistory":
			for _, d := range p.Deps {
				if strings.HasPrefix(d, "github.com/gin-gonic/") || cgo[d] || d == module+"server" || strings.HasPrefix(d, module+"server/web") {
					t.Errorf("server/loadhistory depends on %s; it is below HTTP", d)
				}
			}
			for _, d := range p.Imports {
				if strings.HasPrefix(d, module) && !allowed[d] {
					t.Errorf("server/loadhistory imports %s; of the module it uses only the core, the lanes and the store", d)
				}
			}
		case "server/web", "app":
		default:
			if strings.HasPrefix(p.Rel, "app/") {
				continue
			}
			for _, d := range p.Imports {
				if d == module+"server/runlog" || d == module+"server/loadhistory" {
					t.Errorf("%s imports %s; only the web API and app use it", p.Rel, d)
				}
			}
		}
	}
}
