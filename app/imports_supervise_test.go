package app

import (
	"strings"
	"testing"
)

// TestImportSupervise: runtime/supervise, which runs and watches a `command` engine's server
// process, depends on the standard library alone: nothing of the server (lanes and the
// forwarding engine use it, not the other way), no cgo, no third-party package, so it stays a
// small pure-Go floor any part of the house may build on.
func TestImportSupervise(t *testing.T) {
	graph := moduleGraph(t)
	mustSee(t, graph, "runtime/supervise")
	for _, p := range graph {
		if p.Rel != "runtime/supervise" {
			continue
		}
		for _, d := range p.Deps {
			if first, _, _ := strings.Cut(d, "/"); strings.Contains(first, ".") {
				t.Errorf("runtime/supervise depends on %s; it may use the standard library only", d)
			}
		}
	}
}
