package app

import (
	"strings"
	"testing"
)

// TestImportRulesWebPages: the browser driver is for tests only. No package of the shipped
// binary imports app/browsertest (its files are imported by _test.go files alone, which the
// graph does not list) or chromedp; app/browsertest itself uses nothing of the module, so any
// package's tests may drive a browser without an import cycle.
func TestImportRulesWebPages(t *testing.T) {
	const browser = module + "app/browsertest"
	graph := moduleGraph(t)
	mustSee(t, graph, "app/browsertest", "app")
	for _, p := range graph {
		if p.Rel == "app/browsertest" {
			if d, ok := hasPrefix(p.Imports, module); ok {
				t.Errorf("app/browsertest imports %s; it uses nothing of the module", d)
			}
			continue
		}
		if d, ok := hasPrefix(p.Deps, browser); ok {
			t.Errorf("%s depends on %s; only tests drive a browser", p.Rel, d)
		}
		for _, d := range p.Deps {
			if strings.HasPrefix(d, "github.com/chromedp/") {
				t.Errorf("%s depends on %s; only tests drive a browser", p.Rel, d)
				break
			}
		}
	}
}
