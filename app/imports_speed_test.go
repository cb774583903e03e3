package app

import (
	"strings"
	"testing"
)

// TestImportPeersScriptStandsAlone: bench/peers (the side-by-side of superfluid and Ollama)
// drives both servers as processes over HTTP, so it imports nothing of the module: a change in
// superfluid cannot make the client it is measured by behave differently from Ollama's.
func TestImportPeersScriptStandsAlone(t *testing.T) {
	graph := moduleGraph(t)
	mustSee(t, graph, "bench/peers")
	for _, p := range graph {
		if p.Rel != "bench/peers" {
			continue
		}
		if d, ok := hasPrefix(p.Deps, module); ok {
			t.Errorf("bench/peers depends on %s; it must drive the servers over HTTP only", strings.TrimPrefix(d, module))
		}
	}
}
