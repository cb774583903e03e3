package app

import (
	"strings"
	"testing"
)

// TestImportRulesBatches: the Files and Batches APIs (server/batches) are built on the core's
// public calls, so the arrow runs batches → core and never back; only the dialect that serves
// /v1/files and /v1/batches (OpenAI) reaches them; and, like the core, they know nothing of
// HTTP, the desktop, metrics or cgo, nor of any dialect's wire format.
func TestImportRulesBatches(t *testing.T) {
	const batches = module + "server/batches"
	cgo := cgoPackages(t)
	graph := moduleGraph(t)
	mustSee(t, graph, "server/batches", "server/core", "server/openai", "server/anthropic", "server/ollama")
	for _, p := range graph {
		switch {
		case p.Rel == "server/core" || strings.HasPrefix(p.Rel, "server/core/"):
			if d, ok := hasPrefix(p.Deps, batches); ok {
				t.Errorf("%s depends on %s; the core must not know server/batches (it is built on the core)", p.Rel, d)
			}
		case p.Rel == "server/anthropic" || p.Rel == "server/ollama":
			if d, ok := hasPrefix(p.Imports, batches); ok {
				t.Errorf("%s imports %s; only server/openai serves the Files and Batches APIs", p.Rel, d)
			}
		case p.Rel == "server/batches":
			for _, d := range p.Deps {
				if strings.HasPrefix(d, "github.com/gin-gonic/") || strings.HasPrefix(d, "github.com/prometheus/") ||
					strings.HasPrefix(d, "fyne.io/") || d == llamaPackage || cgo[d] {
					t.Errorf("server/batches depends on %s; like the core, it must not", d)
				}
			}
			for _, dialect := range []string{"server/openai", "server/anthropic", "server/ollama"} {
				if d, ok := hasPrefix(p.Deps, module+dialect); ok {
					t.Errorf("server/batches depends on %s; the dialects call it, never the other way", d)
				}
			}
		}
	}
}
