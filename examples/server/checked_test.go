package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The program opens every transaction on the Service's Store, whose
// transactions are checked before a store sees them (the checks live above
// the stores): a View or Update called on anything but svc.Store() would
// hand the raw store values no layer has checked.
func TestTransactionsThroughTheService(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || (sel.Sel.Name != "View" && sel.Sel.Name != "Update") {
				return true
			}
			if store, ok := sel.X.(*ast.CallExpr); ok {
				if s, ok := store.Fun.(*ast.SelectorExpr); ok && s.Sel.Name == "Store" {
					return true
				}
			}
			t.Errorf("%s: %s.%s: open transactions on svc.Store(), not on the raw store",
				fset.Position(call.Pos()), src[fset.Position(sel.X.Pos()).Offset:fset.Position(sel.X.End()).Offset], sel.Sel.Name)
			return true
		})
	}
}
