package app

import (
	"strings"
	"testing"
)

// TestImportMedia: runtime/media (decoding images and audio from the network) is pure Go on
// the runtime floor: of the module it imports runtime/llm alone, it depends on nothing of the
// server and on no cgo, and only the core (which resolves a request's media parts) and the
// composition root import it: the dialects hand parts over undecoded.
func TestImportMedia(t *testing.T) {
	graph := moduleGraph(t)
	mustSee(t, graph, "runtime/media", "server/core")
	cgo := cgoPackages(t)
	for _, p := range graph {
		if p.Rel == "runtime/media" {
			for _, imp := range p.Imports {
				if rel, ours := strings.CutPrefix(imp, module); ours && rel != "runtime/llm" {
					t.Errorf("runtime/media imports %s; of the module it imports runtime/llm only", rel)
				}
			}
			for _, d := range p.Deps {
				if strings.HasPrefix(d, module+"server") || strings.HasPrefix(d, "github.com/gin-gonic/") || cgo[d] {
					t.Errorf("runtime/media depends on %s; it is pure Go and knows nothing of the server", d)
				}
			}
			continue
		}
		for _, imp := range p.Imports {
			if imp == module+"runtime/media" && p.Rel != "server/core" && p.Rel != "app" {
				t.Errorf("%s imports runtime/media; only server/core and app may (dialects pass media parts undecoded)", p.Rel)
			}
		}
	}
}
