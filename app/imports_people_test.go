package app

import (
	"strings"
	"testing"
)

// TestImportRulesPeople: team mode's accounts (server/people) are a core-floor package: no
// HTTP, desktop, metrics or cgo; of the module only the store and auth (the arrow runs people
// → auth, never back: the keyring reads the people table through the store). Only the router
// and app use it, never a dialect or the core, and it is the only user of argon2 (passwords are
// hashed in one place).
func TestImportRulesPeople(t *testing.T) {
	const people = module + "server/people"
	const argon2 = "golang.org/x/crypto/argon2"
	cgo := cgoPackages(t)
	graph := moduleGraph(t)
	mustSee(t, graph, "server/people", "server/auth", "server/core", "server/openai", "server")
	for _, p := range graph {
		if p.Rel == "server/people" {
			for _, d := range p.Deps {
				if strings.HasPrefix(d, "github.com/gin-gonic/") || strings.HasPrefix(d, "github.com/prometheus/") ||
					strings.HasPrefix(d, "fyne.io/") || d == llamaPackage || cgo[d] {
					t.Errorf("server/people depends on %s; like the core, it must not", d)
				}
			}
			for _, d := range p.Imports {
				if strings.HasPrefix(d, module) && d != module+"server/store" && d != module+"server/auth" {
					t.Errorf("server/people imports %s; of the module it uses only server/store and server/auth", d)
				}
			}
			continue
		}
		if p.Rel != "server" && p.Rel != "server/web" && p.Rel != "app" && !strings.HasPrefix(p.Rel, "app/") { // server/web: the router's browser API
			if d, ok := hasPrefix(p.Imports, people); ok {
				t.Errorf("%s imports %s; only the router (server) and app use team mode's people", p.Rel, d)
			}
		}
		if d, ok := hasPrefix(p.Imports, argon2); ok {
			t.Errorf("%s imports %s; passwords are hashed in server/people only", p.Rel, d)
		}
	}
}
