package app

import (
	"strings"
	"testing"
)

// TestImportRulesQuota: team mode's token quotas (server/quota) are a core-floor package: no
// HTTP, desktop, metrics or cgo; of the module only the store, auth and runtime/llm (its
// refusal is an llm.StatusError). It never imports the core (the router hands it the core's
// token meter as a quota.Meter), so the core cannot come to depend on quotas; only the router
// and app use it.
func TestImportRulesQuota(t *testing.T) {
	const quota = module + "server/quota"
	allowed := map[string]bool{module + "server/store": true, module + "server/auth": true, module + "runtime/llm": true}
	cgo := cgoPackages(t)
	graph := moduleGraph(t)
	mustSee(t, graph, "server/quota", "server/core", "server/openai", "server")
	for _, p := range graph {
		if p.Rel == "server/quota" {
			for _, d := range p.Deps {
				if strings.HasPrefix(d, "github.com/gin-gonic/") || strings.HasPrefix(d, "github.com/prometheus/") ||
					strings.HasPrefix(d, "fyne.io/") || d == llamaPackage || cgo[d] {
					t.Errorf("server/quota depends on %s; like the core, it must not", d)
				}
			}
			for _, d := range p.Imports {
				if strings.HasPrefix(d, module) && !allowed[d] {
					t.Errorf("server/quota imports %s; of the module it uses only server/store, server/auth and runtime/llm", d)
				}
			}
			continue
		}
		if p.Rel != "server" && p.Rel != "server/web" && p.Rel != "app" && !strings.HasPrefix(p.Rel, "app/") { // server/web: the router's browser API
			if d, ok := hasPrefix(p.Imports, quota); ok {
				t.Errorf("%s imports %s; only the router (server) and app use the token quotas", p.Rel, d)
			}
		}
	}
}
