package app

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportRules enforces the house rules on imports: only runtime/llamacpp imports the cgo
// llama package; no server package depends on fyne or on llama.cpp; the core packages never
// import gin, prometheus (metrics reach the core through core.Observer), fyne or any
// non-standard package that uses cgo.
const llamaPackage = "github.com/ollama/ollama/llama"

func TestImportRules(t *testing.T) {
	cgo := cgoPackages(t)
	const llama = llamaPackage
	core := []string{"server/core", "server/store", "server/auth", "runtime/llm", "runtime/chat", "runtime/worker", "runtime/gguf", "runtime/sampling",
		"runtime/enginetest", "runtime/models", "runtime/models/hf", "runtime/backends",
		"runtime/gguf/gguftest"}
	dialects := map[string]bool{"server/openai": true, "server/anthropic": true, "server/ollama": true}
	graph := moduleGraph(t)
	mustSee(t, graph, append(core, "runtime/llamacpp", "tray", "server/openai", "server/anthropic", "server/ollama")...)
	for _, p := range graph {
		rel, imports, deps := p.Rel, p.Imports, p.Deps
		for _, imp := range imports {
			if imp == llama && rel != "runtime/llamacpp" {
				t.Errorf("%s imports %s; only runtime/llamacpp may", rel, llama)
			}
		}
		if strings.HasPrefix(rel, "server") {
			for _, d := range deps {
				if strings.HasPrefix(d, "fyne.io/") || d == llama {
					t.Errorf("%s depends on %s; server packages must not", rel, d)
				}
			}
		}
		// No arrow runs back up: the runtime never depends on the server (the catalog's
		// persistence is an interface that server/store implements).
		if strings.HasPrefix(rel, "runtime/") {
			for _, d := range deps {
				if strings.HasPrefix(d, module+"server/") {
					t.Errorf("%s depends on %s; no runtime package may depend on a server package", rel, d)
				}
			}
		}
		// The dialects reach SQLite only through the core.
		if dialects[rel] {
			for _, imp := range imports {
				if imp == module+"server/store" {
					t.Errorf("%s imports server/store; dialects reach the store through server/core", rel)
				}
			}
		}
		// The desktop app knows the server only through its Controller interface.
		if rel == "tray" {
			for _, d := range deps {
				if strings.HasPrefix(d, module+"server") || strings.HasPrefix(d, module+"runtime") || strings.HasPrefix(d, module+"app") ||
					strings.HasPrefix(d, "github.com/gin-gonic/") || d == llama {
					t.Errorf("tray depends on %s; it must know the server only through tray.Controller", d)
				}
			}
		}
		for _, c := range core {
			if rel != c {
				continue
			}
			for _, d := range deps {
				if strings.HasPrefix(d, "github.com/gin-gonic/") || strings.HasPrefix(d, "github.com/prometheus/") ||
					strings.HasPrefix(d, "fyne.io/") || d == llama || cgo[d] {
					t.Errorf("core package %s depends on %s", rel, d)
				}
			}
		}
	}
}

// modulePackage is one of the module's packages: its path relative to the module, what it
// imports directly and everything it depends on (full import paths).
type modulePackage struct {
	Rel           string
	Imports, Deps []string
}

// module is the module's import path prefix.
const module = "github.com/superfluid/superfluid/"

// moduleGraph lists the module's packages with their imports and dependencies, for the
// import rules (each rule may live in its own test file).
func moduleGraph(t *testing.T) []modulePackage {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}|{{join .Imports " "}}|{{join .Deps " "}}`, module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []modulePackage
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		parts := strings.SplitN(line, "|", 3)
		if !strings.HasPrefix(parts[0], module) {
			continue
		}
		pkgs = append(pkgs, modulePackage{strings.TrimPrefix(parts[0], module), strings.Fields(parts[1]), strings.Fields(parts[2])})
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list saw only %d of the module's packages", len(pkgs))
	}
	return pkgs
}

// mustSee fails t unless the graph has each of the packages rels (relative to the module): a
// rule naming a package that was renamed or moved would otherwise pass without checking it.
func mustSee(t *testing.T, graph []modulePackage, rels ...string) {
	t.Helper()
	have := map[string]bool{}
	for _, p := range graph {
		have[p.Rel] = true
	}
	for _, rel := range rels {
		if !have[rel] {
			t.Errorf("go list did not see %s; the rule about it would be blind", rel)
		}
	}
}

// hasPrefix reports whether any of paths starts with prefix.
func hasPrefix(paths []string, prefix string) (string, bool) {
	for _, p := range paths {
		if strings.HasPrefix(p, prefix) {
			return p, true
		}
	}
	return "", false
}

// cgoPackages lists the non-standard packages (in the module's dependency graph) with cgo files.
func cgoPackages(t *testing.T) map[string]bool {
	out, err := exec.Command("go", "list", "-deps", "-f", `{{if and (not .Standard) .CgoFiles}}{{.ImportPath}}{{end}}`, "github.com/superfluid/superfluid/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	set := map[string]bool{}
	for _, p := range strings.Fields(string(out)) {
		set[p] = true
	}
	if !set[llamaPackage] {
		t.Fatalf("go list found no cgo in %s; the check would be blind", llamaPackage)
	}
	return set
}
