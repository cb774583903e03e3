package app

import (
	"strings"
	"testing"
)

// TestImportRulesDialects: the dialects meet only in the router (server), whose one table
// (server/dialects.go) chooses the error shape of its refusals, so no dialect depends on
// another; and what they share, the Dialect seam (server/dialect) and the body reader
// (server/reqbody), depends on no package of the module, so it can never learn a dialect.
func TestImportRulesDialects(t *testing.T) {
	dialects := []string{"server/openai", "server/anthropic", "server/ollama"}
	graph := moduleGraph(t)
	mustSee(t, graph, append(dialects, "server/dialect", "server/reqbody")...)
	for _, p := range graph {
		switch p.Rel {
		case "server/openai", "server/anthropic", "server/ollama":
			for _, other := range dialects {
				if d, ok := hasPrefix(p.Deps, module+other); ok && other != p.Rel {
					t.Errorf("%s depends on %s; dialects do not know each other (the router wires them)", p.Rel, d)
				}
			}
		case "server/dialect", "server/reqbody":
			for _, d := range p.Deps {
				if strings.HasPrefix(d, module) {
					t.Errorf("%s depends on %s; the seam the dialects share depends on no package of the module", p.Rel, d)
				}
			}
		}
	}
}
