package gateway_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestLockDoc keeps the lock list of doc.go honest: every mutex field of a
// struct of the package (its non-test files) is listed there as
// Type.field, and every entry of the list names a mutex that exists.
func TestLockDoc(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	entry := regexp.MustCompile(`(?m)^//\t\s*([A-Za-z]+(?:\.[A-Za-z]+)+)\s{2,}`)
	for _, m := range entry.FindAllSubmatch(doc, -1) {
		listed[string(m[1])] = true
	}
	if len(listed) == 0 {
		t.Fatal("doc.go has no lock list")
	}

	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var found []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return true
			}
			for _, field := range st.Fields.List {
				if !isMutex(field.Type) {
					continue
				}
				for _, id := range field.Names {
					found = append(found, ts.Name.Name+"."+id.Name)
				}
			}
			return false
		})
	}
	if len(found) == 0 {
		t.Fatal("found no mutex: the scan is broken")
	}
	for _, lock := range found {
		if !listed[lock] {
			t.Errorf("%s is not in doc.go's lock list: say what it guards and where it nests", lock)
		}
	}
	for lock := range listed {
		if !slices.Contains(found, lock) && !strings.HasPrefix(lock, "audit.") {
			t.Errorf("doc.go lists %s, which is no mutex of the package", lock)
		}
	}
}

// isMutex reports whether a field's type is sync.Mutex or sync.RWMutex.
func isMutex(e ast.Expr) bool {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == "sync" && (sel.Sel.Name == "Mutex" || sel.Sel.Name == "RWMutex")
}
