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
	"go/types"
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
		// Rooms speak in their own types; the node's API adapter
		// (node/api_*.go) converts them.
		{from: "node/trust", forbidden: []string{"node/api"}},
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

// TestRoomComponentsDoNotHoldTheRoom keeps the rooms' insides as the node
// is kept (issue 22): each component of a room is built from its own deps
// and callbacks, so no struct in a room's package but the room type itself
// holds the room (a *Renter field, or one whose type names Renter).
func TestRoomComponentsDoNotHoldTheRoom(t *testing.T) {
	rooms := []struct {
		dir      string // the room's package, slash-separated
		roomType string
	}{
		{"node/provider", "Provider"},
		{"node/renter", "Renter"},
	}
	for _, room := range rooms {
		t.Run(room.dir, func(t *testing.T) {
			paths, err := filepath.Glob(filepath.Join(filepath.FromSlash(room.dir), "*.go"))
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, path := range paths {
				if strings.HasSuffix(path, "_test.go") {
					continue
				}
				fset := token.NewFileSet()
				f, err := parser.ParseFile(fset, path, nil, 0)
				if err != nil {
					t.Fatal(err)
				}
				ast.Inspect(f, func(n ast.Node) bool {
					spec, ok := n.(*ast.TypeSpec)
					if !ok {
						return true
					}
					if spec.Name.Name == room.roomType {
						found = true
						return false // the room may hold its components
					}
					st, ok := spec.Type.(*ast.StructType)
					if !ok {
						return true
					}
					for _, field := range st.Fields.List {
						if namesType(field.Type, room.roomType) {
							t.Errorf("%s: struct %s holds the room (%s): give it its own deps or callbacks instead",
								fset.Position(field.Pos()), spec.Name.Name, types.ExprString(field.Type))
						}
					}
					return true
				})
			}
			if !found {
				t.Fatalf("no type %s in %s: is the table current?", room.roomType, room.dir)
			}
		})
	}
}

// namesType reports whether a field's type expression names the type name
// anywhere (name, *name, []*name, func(*name), map[string]*name, ...).
func namesType(expr ast.Expr, name string) bool {
	hit := false
	ast.Inspect(expr, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && id.Name == name {
			hit = true
		}
		return !hit
	})
	return hit
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
