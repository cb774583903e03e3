package app

import "testing"

// TestImportForward: the forwarding engine (server/forward) sits on the core's floor: no gin
// (the router's middleware, server/via.go, uses its helpers), and nothing of the router or a
// dialect, so any dialect's requests reach it through the core alone.
func TestImportForward(t *testing.T) {
	seen := false
	for _, p := range moduleGraph(t) {
		if p.Rel != "server/forward" {
			continue
		}
		seen = true
		if dep, ok := hasPrefix(p.Deps, "github.com/gin-gonic/"); ok {
			t.Errorf("server/forward depends on %s: the engine has no gin", dep)
		}
		for _, banned := range []string{"server", "server/openai", "server/anthropic", "server/ollama", "server/dialect", "server/store"} {
			for _, imp := range p.Imports {
				if imp == module+banned {
					t.Errorf("server/forward imports %s: an engine reaches no router, dialect or store", imp)
				}
			}
		}
	}
	if !seen {
		t.Fatal("server/forward is not in the module graph")
	}
}
