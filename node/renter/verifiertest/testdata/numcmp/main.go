// Command numcmp is a test output verifier (job spec `verifier:`): it
// compares the trees /a and /b file by file, token by token, and exits 0
// when they hold the same files whose numbers differ by at most the
// tolerance (its one argument, absolute; default 0.001) and whose other
// words are equal, or 1 naming the first difference.
package main

import (
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

func main() {
	tol := 1e-3
	if len(os.Args) > 1 {
		t, err := strconv.ParseFloat(os.Args[1], 64)
		if err != nil || t < 0 {
			fmt.Println("usage: numcmp [TOLERANCE]")
			os.Exit(2)
		}
		tol = t
	}
	if why := compare("/a", "/b", tol); why != "" {
		fmt.Println("differ:", why)
		os.Exit(1)
	}
	fmt.Printf("equivalent within %g\n", tol)
}

func compare(a, b string, tol float64) string {
	fa, err := files(a)
	if err != nil {
		return err.Error()
	}
	fb, err := files(b)
	if err != nil {
		return err.Error()
	}
	if len(fa) != len(fb) {
		return fmt.Sprintf("%d files against %d", len(fa), len(fb))
	}
	for name, ta := range fa {
		tb, ok := fb[name]
		if !ok {
			return name + " is in one output only"
		}
		if len(ta) != len(tb) {
			return fmt.Sprintf("%s: %d words against %d", name, len(ta), len(tb))
		}
		for i := range ta {
			x, errx := strconv.ParseFloat(ta[i], 64)
			y, erry := strconv.ParseFloat(tb[i], 64)
			switch {
			case errx == nil && erry == nil:
				if math.Abs(x-y) > tol {
					return fmt.Sprintf("%s: %s and %s differ by more than %g", name, ta[i], tb[i], tol)
				}
			case ta[i] != tb[i]:
				return fmt.Sprintf("%s: %q and %q", name, ta[i], tb[i])
			}
		}
	}
	return ""
}

// files reads every regular file under root as words, by relative path.
func files(root string) (map[string][]string, error) {
	out := map[string][]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		out[rel] = strings.Fields(string(data))
		return nil
	})
	return out, err
}
