package app

import (
	"strings"
	"testing"
)

// TestImportDesktopTalksToTheCore: the desktop controller (app/desktop) reaches the server
// through the core, as the dialects do: it depends on no gin, no dialect package and not on
// the router, so nothing it does can take an HTTP-only road. (That tray knows only
// tray.Controller is TestImportRules' rule.)
func TestImportDesktopTalksToTheCore(t *testing.T) {
	seen := false
	for _, p := range moduleGraph(t) {
		if p.Rel != "app/desktop" && !strings.HasPrefix(p.Rel, "app/desktop/") {
			continue
		}
		seen = true
		if d, ok := hasPrefix(p.Deps, "github.com/gin-gonic/"); ok {
			t.Errorf("%s depends on %s; the desktop controller talks to the core, not to HTTP handlers", p.Rel, d)
		}
		for _, d := range p.Deps {
			switch strings.TrimPrefix(d, module) {
			case "server", "server/openai", "server/anthropic", "server/ollama", "app":
				t.Errorf("%s depends on %s; the desktop controller talks to server/core only", p.Rel, d)
			}
		}
	}
	if !seen {
		t.Fatal("no app/desktop package in the module graph; the rule would be blind")
	}
}
