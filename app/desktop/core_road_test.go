package desktop

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// TestChangesGoThroughTheCore: the controller keeps the core's model manager only to read what
// the window shows (states, the memory budget, events); every change (load, unload, delete,
// pull, settings) goes through the core, as the APIs' do. So the manager's calls in this
// package are its readers only, and the catalog's too. (A Load straight to the manager, as
// the desktop had before, fails it: the unit tests cannot tell the two roads apart.)
func TestChangesGoThroughTheCore(t *testing.T) {
	readers := map[string]bool{"Catalog": true, "Status": true, "Engine": true, "Budget": true, "Config": true,
		"Subscribe": true, "Settings": true}
	catalogReaders := map[string]bool{"List": true, "Lookup": true, "Dir": true}
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	calls := 0
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			// X.mgr.Method
			if inner, ok := sel.X.(*ast.SelectorExpr); ok && inner.Sel.Name == "mgr" {
				calls++
				if !readers[sel.Sel.Name] {
					t.Errorf("%s: the controller calls the manager's %s; changes go through the core (c.svc)", fset.Position(sel.Pos()), sel.Sel.Name)
				}
			}
			// X.mgr.Catalog().Method
			if call, ok := sel.X.(*ast.CallExpr); ok {
				if fn, ok := call.Fun.(*ast.SelectorExpr); ok && fn.Sel.Name == "Catalog" {
					if inner, ok := fn.X.(*ast.SelectorExpr); ok && inner.Sel.Name == "mgr" && !catalogReaders[sel.Sel.Name] {
						t.Errorf("%s: the controller calls the catalog's %s; changes go through the core (c.svc)", fset.Position(sel.Pos()), sel.Sel.Name)
					}
				}
			}
			return true
		})
	}
	if calls == 0 {
		t.Fatal("no call on the manager found; the rule would be blind (was the field renamed?)")
	}
}
