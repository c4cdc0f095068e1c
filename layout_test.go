// Tests that keep the repository's shape: every package documented, and
// imports flowing one way (DESIGN section 3):
//
//	cmd -> node -> {node/provider, node/renter, node/trust} -> node/lease
//	node/* -> {p2p, store, auction, attest}, auction -> attest
//
// and nothing flows back up.
package idlegrid_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/idlegrid/idlegrid"

// goPackage is one directory of non-test Go files.
type goPackage struct {
	dir     string // relative, slash-separated
	name    string
	hasDoc  bool
	imports map[string]bool // module-relative paths of internal imports
}

func loadPackages(t *testing.T) []goPackage {
	t.Helper()
	byDir := map[string]*goPackage{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ParseComments|parser.ImportsOnly)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(path))
		p := byDir[dir]
		if p == nil {
			p = &goPackage{dir: dir, name: f.Name.Name, imports: map[string]bool{}}
			byDir[dir] = p
		}
		if f.Doc != nil {
			text := f.Doc.Text()
			if strings.HasPrefix(text, "Package "+f.Name.Name+" ") || strings.HasPrefix(text, "Command ") {
				p.hasDoc = true
			}
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if rel, ok := strings.CutPrefix(path, module+"/"); ok {
				p.imports[rel] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []goPackage
	for _, p := range byDir {
		out = append(out, *p)
	}
	if len(out) < 5 {
		t.Fatalf("found only %d packages; is the test running at the repository root?", len(out))
	}
	return out
}

func TestEveryPackageHasADocComment(t *testing.T) {
	for _, p := range loadPackages(t) {
		if !p.hasDoc {
			t.Errorf("package %s (%s) has no package doc comment (// Package %s ...)", p.name, p.dir, p.name)
		}
	}
}

// under reports whether pkg is dir or inside it.
func under(pkg, dir string) bool { return pkg == dir || strings.HasPrefix(pkg, dir+"/") }

func TestImportDirection(t *testing.T) {
	type rule struct {
		from      string   // package tree the rule applies to
		forbidden []string // package trees it must not import
		except    []string // packages inside "from" the rule skips
		allow     []string // imports inside "forbidden" the rule permits
	}
	rules := []rule{
		{from: "p2p", forbidden: []string{"auction", "attest", "store", "node", "cmd"}},
		{from: "auction", forbidden: []string{"p2p", "store", "node", "cmd"}},
		{from: "attest", forbidden: []string{"p2p", "store", "node", "cmd", "auction"}},
		{from: "store", forbidden: []string{"p2p", "node", "cmd"}},
		{from: "node", forbidden: []string{"cmd"}},
		// Subpackages of node serve node; they never reach back up into it.
		// nodetest exists to build whole nodes, so it may.
		{from: "node/", forbidden: []string{"node"}, except: []string{"node/nodetest", "node/devnet"}},
		// The rooms (issue 10): the provider and the renter meet only
		// through node/lease and the callbacks node wires; neither knows
		// trust; trust knows neither; the lease contract knows no room.
		{from: "node/provider", forbidden: []string{"node/renter", "node/trust"}},
		// Rooms return their own types; node's adapter turns them into
		// the API's (issue 22).
		{from: "node/provider", forbidden: []string{"node/api"}},
		{from: "node/renter", forbidden: []string{"node/provider", "node/trust"}},
		{from: "node/trust", forbidden: []string{"node/provider", "node/renter"}},
		{from: "node/lease", forbidden: []string{"node/provider", "node/renter", "node/trust"}},
		// Failpoints are a leaf the rooms call into: they import nothing of
		// idlegrid.
		{from: "node/failpoint", forbidden: []string{"node", "p2p", "auction", "attest", "store"}},
		// The CLI talks to daemons through the API client and its types;
		// only init, daemon and devnet build nodes, via package node.
		// One exception: idlegrid sim is an offline tool that replays traces
		// through the pure market rules, with no node to ask, so cmd may
		// import auction/sim (and through it auction), nothing else of them.
		{from: "cmd", forbidden: []string{"p2p", "store", "auction", "attest", "node/gpu", "node/nodetest"}, allow: []string{"auction/sim", "auction/netmodel"}},
	}
	for _, p := range loadPackages(t) {
		for _, r := range rules {
			inTree := under(p.dir, r.from)
			if strings.HasSuffix(r.from, "/") {
				inTree = strings.HasPrefix(p.dir, r.from)
			}
			if !inTree {
				continue
			}
			skip := false
			for _, e := range r.except {
				if under(p.dir, e) {
					skip = true
				}
			}
			if skip {
				continue
			}
			for imp := range p.imports {
				for _, bad := range r.forbidden {
					if bad == "node" && strings.HasSuffix(r.from, "/") {
						// only the node package itself, not its siblings
						if imp != "node" {
							continue
						}
					} else if !under(imp, bad) || slices.Contains(r.allow, imp) {
						continue
					}
					t.Errorf("%s imports %s: forbidden by the import direction (DESIGN section 3)", p.dir, imp)
				}
			}
		}
	}
}

// TestRoomComponentsDoNotHoldTheRoom keeps the rooms' insides the way
// node keeps the rooms (issue 22): each component of a room is built from
// its own deps and callbacks, and only the room type, a facade that wires
// them, holds the components. A struct with a field of the room's pointer
// type (a back-pointer) fails.
func TestRoomComponentsDoNotHoldTheRoom(t *testing.T) {
	rooms := []struct{ dir, roomType string }{
		{"node/provider", "Provider"},
	}
	for _, room := range rooms {
		t.Run(room.dir, func(t *testing.T) {
			files, err := filepath.Glob(filepath.Join(filepath.FromSlash(room.dir), "*.go"))
			if err != nil {
				t.Fatal(err)
			}
			fset := token.NewFileSet()
			found := false
			for _, path := range files {
				if strings.HasSuffix(path, "_test.go") {
					continue
				}
				f, err := parser.ParseFile(fset, path, nil, 0)
				if err != nil {
					t.Fatal(err)
				}
				ast.Inspect(f, func(n ast.Node) bool {
					if ts, ok := n.(*ast.TypeSpec); ok && ts.Name.Name == room.roomType {
						found = true
						return false // the room itself holds its components
					}
					st, ok := n.(*ast.StructType)
					if !ok {
						return true
					}
					for _, field := range st.Fields.List {
						if holdsRoom(field.Type, room.roomType) {
							t.Errorf("%s: a struct holds *%s: give the component its own deps or callbacks instead of the room",
								fset.Position(field.Pos()), room.roomType)
						}
					}
					return true
				})
			}
			if !found {
				t.Fatalf("no type %s in %s", room.roomType, room.dir)
			}
		})
	}
}

// holdsRoom reports whether a field's type is, or contains, *roomType.
func holdsRoom(typ ast.Expr, roomType string) bool {
	held := false
	ast.Inspect(typ, func(n ast.Node) bool {
		if star, ok := n.(*ast.StarExpr); ok {
			if id, ok := star.X.(*ast.Ident); ok && id.Name == roomType {
				held = true
			}
		}
		return !held
	})
	return held
}

func TestLicenseAndReadme(t *testing.T) {
	lic, err := os.ReadFile("LICENSE")
	if err != nil || !strings.Contains(string(lic), "Apache License") {
		t.Fatalf("LICENSE must be the Apache License 2.0: %v", err)
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	ci, err := os.ReadFile(".ci/run")
	if err != nil {
		t.Fatal(err)
	}
	// The README's test command is what CI runs.
	const testCmd = "make test"
	if !strings.Contains(string(readme), testCmd) || !strings.Contains(string(ci), testCmd) {
		t.Errorf("README.md and .ci/run must both use %q", testCmd)
	}
}
