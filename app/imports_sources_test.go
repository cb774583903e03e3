package app

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImportRulesSources keeps model sources behind models.Source and the manager behind the
// core: no dialect and not the metrics imports runtime/models (or a source of it), the core
// names no source (runtime/models/hf), and of app and its packages only the file that
// registers the sources does.
func TestImportRulesSources(t *testing.T) {
	const models, hf = module + "runtime/models", module + "runtime/models/hf"
	speakToCore := map[string]bool{"server/openai": true, "server/anthropic": true, "server/ollama": true, "server/metrics": true}
	graph := moduleGraph(t)
	mustSee(t, graph, "server/openai", "server/anthropic", "server/ollama", "server/metrics", "server/core", "runtime/models", "runtime/models/hf")
	for _, p := range graph {
		if speakToCore[p.Rel] {
			for _, imp := range p.Imports {
				if imp == models || strings.HasPrefix(imp, models+"/") {
					t.Errorf("%s imports %s; dialects and metrics speak to server/core only", p.Rel, strings.TrimPrefix(imp, module))
				}
			}
		}
		if _, ok := hasPrefix(p.Imports, hf); ok && p.Rel == "server/core" {
			t.Errorf("server/core imports runtime/models/hf; it pulls through models.Source")
		}
		if _, ok := hasPrefix(p.Imports, hf); ok && strings.HasPrefix(p.Rel, "app/") {
			t.Errorf("%s imports runtime/models/hf; only app/sources.go, which registers the model sources, may", p.Rel)
		}
	}
	// Per file: app names Hugging Face only where it registers the sources.
	const registers = "sources.go"
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	seen := false
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if path != hf && !strings.HasPrefix(path, hf+"/") {
				continue
			}
			if name == registers {
				seen = true
			} else {
				t.Errorf("app/%s imports %s; only app/%s, which registers the model sources, may", name, strings.TrimPrefix(path, module), registers)
			}
		}
	}
	if !seen {
		t.Errorf("app/%s does not import runtime/models/hf; the per-file check would be blind", registers)
	}
}
