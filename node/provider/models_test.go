package provider

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/idlegrid/idlegrid/auction"
)

func TestHeldModels(t *testing.T) {
	digest := strings.Repeat("a", 64)
	named := func(name string) string { return name + "@sha256:" + digest }
	dir := t.TempDir()
	for _, n := range []string{named("zeta"), named("alpha"), "alpha.partial", named("cfg-model"), "README"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg := OfferConfig{Models: []string{"CFG-Model@sha256:" + strings.ToUpper(digest)}, ModelsDir: dir}
	got := heldModels(cfg, slog.New(slog.DiscardHandler))
	// The configured model first (canonical), then the directory's in
	// name order; the directory's copy of the configured one once; the
	// names that are not model IDs skipped.
	want := []string{named("cfg-model"), named("alpha"), named("zeta")}
	if !slices.Equal(got, want) {
		t.Errorf("heldModels = %v, want %v", got, want)
	}

	for i := range auction.MaxHeldModels + 5 {
		if err := os.WriteFile(filepath.Join(dir, named(fmt.Sprintf("m%03d", i))), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if got := heldModels(cfg, slog.New(slog.DiscardHandler)); len(got) != auction.MaxHeldModels || got[0] != named("cfg-model") {
		t.Errorf("a full directory: %d models, first %q; want %d, the configured one first", len(got), got[0], auction.MaxHeldModels)
	}
	cfg.ModelsDir = filepath.Join(dir, "missing")
	if got := heldModels(cfg, slog.New(slog.DiscardHandler)); !slices.Equal(got, []string{named("cfg-model")}) {
		t.Errorf("a missing directory: %v, want the configured model alone", got)
	}
}
