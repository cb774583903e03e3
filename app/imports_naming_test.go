package app

import (
	"testing"
)

// TestImportCatalogNamesNoSource: the catalog and manager (runtime/models) know no model
// source: they pull through source.Source and take the names a source's models go by from its
// source.Namer, so Hugging Face (runtime/models/hf) is one source among any.
func TestImportCatalogNamesNoSource(t *testing.T) {
	graph := moduleGraph(t)
	mustSee(t, graph, "runtime/models", "runtime/models/source", "runtime/models/hf")
	for _, p := range graph {
		if p.Rel != "runtime/models" && p.Rel != "runtime/models/source" {
			continue
		}
		if d, ok := hasPrefix(p.Deps, module+"runtime/models/hf"); ok {
			t.Errorf("%s depends on %s; it must know sources only through runtime/models/source", p.Rel, d)
		}
	}
}
