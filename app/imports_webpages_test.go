package app

import (
	"strings"
	"testing"
)

// TestImportRulesWebPages: the pages' files (assets/web) use nothing of the module and are
// served by server/web alone. The browser driver is for tests only. No package of the shipped
// binary imports app/browsertest (its files are imported by _test.go files alone, which the
// graph does not list) or chromedp; app/browsertest itself uses nothing of the module, so any
// package's tests may drive a browser without an import cycle.
func TestImportRulesWebPages(t *testing.T) {
	const browser, pages = module + "app/browsertest", module + "assets/web"
	graph := moduleGraph(t)
	mustSee(t, graph, "app/browsertest", "app", "assets/web", "server/web")
	for _, p := range graph {
		if p.Rel == "assets/web" {
			if d, ok := hasPrefix(p.Imports, module); ok {
				t.Errorf("assets/web imports %s; the pages' files use nothing of the module", d)
			}
		} else if p.Rel != "server/web" {
			if d, ok := hasPrefix(p.Imports, pages); ok {
				t.Errorf("%s imports %s; only server/web serves the pages", p.Rel, d)
			}
		}
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
