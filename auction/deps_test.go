package auction

import (
	"go/build"
	"strings"
	"testing"
)

// TestPurePackages enforces DESIGN.md §3 for the packages in this tree:
// each has a package doc and none imports p2p, store, node or cmd (the
// direct imports suffice: each package here is checked, and attest is
// the only in-module dependency).
func TestPurePackages(t *testing.T) {
	const module = "github.com/idlegrid/idlegrid/"
	forbidden := []string{"p2p", "store", "node", "cmd"}
	for _, dir := range []string{"../attest", ".", "./query"} {
		pkg, err := build.ImportDir(dir, 0)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		if strings.TrimSpace(pkg.Doc) == "" {
			t.Errorf("%s: no package doc", dir)
		}
		imports := append(append(pkg.Imports, pkg.TestImports...), pkg.XTestImports...)
		for _, imp := range imports {
			rest, ok := strings.CutPrefix(imp, module)
			if !ok {
				continue
			}
			for _, f := range forbidden {
				if rest == f || strings.HasPrefix(rest, f+"/") {
					t.Errorf("%s imports %s", dir, imp)
				}
			}
		}
	}
}
