package app

import (
	"strings"
	"testing"
)

// TestImportWebTransportStandsAlone: the --web transport (server/websession) knows the desktop
// only through its Session interface: it depends on no package of this module (no tray, no
// app/desktop, no core, no store) and on neither gin nor fyne; only app, which adapts the
// desktop controller to it, imports it.
func TestImportWebTransportStandsAlone(t *testing.T) {
	const pkg = "server/websession"
	found := false
	for _, p := range moduleGraph(t) {
		if p.Rel == pkg {
			found = true
			if d, ok := hasPrefix(p.Deps, module); ok {
				t.Errorf("%s depends on %s; it reaches the desktop through its Session interface only", pkg, d)
			}
			for _, banned := range []string{"github.com/gin-gonic/", "fyne.io/"} {
				if d, ok := hasPrefix(p.Deps, banned); ok {
					t.Errorf("%s depends on %s", pkg, d)
				}
			}
			continue
		}
		for _, imp := range p.Imports {
			if strings.TrimPrefix(imp, module) == pkg && p.Rel != "app" {
				t.Errorf("%s imports %s; only app wires the browser transport", p.Rel, pkg)
			}
		}
	}
	if !found {
		t.Fatalf("%s is not in the module graph", pkg)
	}
}
