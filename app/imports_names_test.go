package app

import (
	"strings"
	"testing"
)

// TestImportQoSLeaf keeps the scheduling classes a leaf: server/core/qos depends on nothing of
// the module, so both server/auth (a key's ceiling) and server/core (the gate) can import it
// without importing each other.
func TestImportQoSLeaf(t *testing.T) {
	const leaf = "server/core/qos"
	seen := false
	for _, p := range moduleGraph(t) {
		if p.Rel != leaf {
			continue
		}
		seen = true
		for _, d := range p.Deps {
			if strings.HasPrefix(d, module) {
				t.Errorf("%s depends on %s; the scheduling classes import nothing of the module", leaf, d)
			}
		}
	}
	if !seen {
		t.Errorf("go list did not see %s", leaf)
	}
}
