package app

import (
	"strings"
	"testing"
)

// TestImportStorage: server/storage (storages, their objects, the S3 client) sits beside the
// people and the lanes: it imports no gin and nothing of the module but server/store (its
// audit goes through the By its caller binds), so the web routes call it and it never calls
// back up. The fake S3 server (server/storage/s3test, gofakes3) is for tests: no package of
// the build depends on it.
func TestImportStorage(t *testing.T) {
	graph := moduleGraph(t)
	mustSee(t, graph, "server/storage", "server/storage/s3test")
	for _, p := range graph {
		if p.Rel == "server/storage" {
			if d, ok := hasPrefix(p.Deps, "github.com/gin-gonic/"); ok {
				t.Errorf("server/storage depends on %s; it has no gin (the routes are server/web's)", d)
			}
			for _, imp := range p.Imports {
				if rel, ours := strings.CutPrefix(imp, module); ours && rel != "server/store" {
					t.Errorf("server/storage imports %s; of the module it imports server/store only", rel)
				}
			}
		}
		if p.Rel == "server/storage/s3test" {
			continue
		}
		for _, d := range p.Deps {
			if d == module+"server/storage/s3test" || strings.HasPrefix(d, "github.com/johannesboyne/gofakes3") {
				t.Errorf("%s depends on %s; the fake S3 server is for tests only", p.Rel, d)
				break
			}
		}
	}
}
