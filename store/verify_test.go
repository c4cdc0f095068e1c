package store

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const (
	fixtureRounds  = 3
	fixturePerRond = 1500
)

var fixtureExpiry = time.UnixMilli(4_000_000_000_000)

func fixtureKey(round, i int) string { return fmt.Sprintf("r%d-%05d", round, i) }
func fixtureValue(round, i int) string {
	return fmt.Sprintf("value of %d/%d, padded so blocks fill: %s", round, i, strings.Repeat("x", i%64))
}

// buildFixture writes fixtureRounds rounds of summaries, closing after
// each so that every round lands in its own table (000001.sst holds round
// 0 and so on), and returns the closed store's directory.
func buildFixture(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")
	for r := range fixtureRounds {
		db, err := Open(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range fixturePerRond {
			if err := db.PutSummary(fixtureKey(r, i), []byte(fixtureValue(r, i)), fixtureExpiry); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for r := range fixtureRounds {
		if _, err := os.Stat(tablePath(dir, r)); err != nil {
			t.Fatalf("fixture layout: round %d has no table: %v", r, err)
		}
	}
	return dir
}

func tablePath(dir string, round int) string {
	return filepath.Join(dir, fmt.Sprintf("%06d.sst", round+1))
}

// checkRounds asserts that every key of the given rounds reads back.
func checkRounds(t *testing.T, db *DB, rounds ...int) {
	t.Helper()
	got, err := db.Summaries()
	if err != nil {
		t.Fatalf("Summaries: %v", err)
	}
	have := make(map[string]bool, len(got))
	for _, v := range got {
		have[string(v)] = true
	}
	for _, r := range rounds {
		for i := range fixturePerRond {
			if !have[fixtureValue(r, i)] {
				t.Fatalf("round %d key %d lost (%d values read)", r, i, len(got))
			}
		}
	}
}

func copyDir(t testing.TB, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "store")
	if err := os.MkdirAll(dst, 0o700); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		in, err := os.Open(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out, err := os.Create(filepath.Join(dst, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(out, in); err != nil {
			t.Fatal(err)
		}
		_ = in.Close()
		if err := out.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// overwrite puts junk over n bytes of path at off (negative: from the end),
// making sure every byte changes.
func overwrite(t testing.TB, path string, off int64, n int, rng *rand.Rand) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if off < 0 {
		off += int64(len(data))
	}
	for i := off; i < off+int64(n) && i < int64(len(data)); i++ {
		data[i] ^= byte(1 + rng.IntN(255))
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func truncate(t testing.TB, path string, size int64) {
	t.Helper()
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
}

func fileSize(t testing.TB, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// openNoPanic opens dir and turns a panic into a test failure naming it.
func openNoPanic(t *testing.T, dir string, opts Options) (db *DB, err error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("Open panicked: %v", r)
		}
	}()
	db, err = Open(dir, opts)
	if err == nil {
		t.Cleanup(func() { _ = db.Close() })
	}
	return db, err
}

// wantCorrupt asserts err is a CorruptError naming file.
func wantCorrupt(t *testing.T, err error, file string) {
	t.Helper()
	var ce *CorruptError
	if !errors.Is(err, ErrCorrupt) || !errors.As(err, &ce) {
		t.Fatalf("got %v, want a CorruptError naming %s", err, file)
	}
	if filepath.Base(ce.File) != file {
		t.Fatalf("error names %s, want %s: %v", ce.File, file, err)
	}
	if !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), "--salvage-store") {
		t.Fatalf("message must name the file and the way out: %v", err)
	}
}

func TestDamagedStoreIsTypedErrorNamingTheFile(t *testing.T) {
	pristine := buildFixture(t)
	rng := rand.New(rand.NewPCG(14, 1))
	t1 := tablePath(pristine, 1)
	size := fileSize(t, t1)
	manifestSize := fileSize(t, filepath.Join(pristine, manifestName))
	cases := []struct {
		name   string
		damage func(dir string)
		file   string // the file the error must name
	}{
		{"sst bytes in the middle", func(d string) { overwrite(t, tablePath(d, 1), size/2, 16, rng) }, "000002.sst"},
		{"sst first block", func(d string) { overwrite(t, tablePath(d, 1), 10, 1, rng) }, "000002.sst"},
		{"sst random tail", func(d string) { overwrite(t, tablePath(d, 1), -200, 200, rng) }, "000002.sst"},
		{"sst footer checksum length", func(d string) { overwrite(t, tablePath(d, 1), -4, 4, rng) }, "000002.sst"},
		{"sst index length", func(d string) { overwrite(t, tablePath(d, 1), -20, 4, rng) }, "000002.sst"},
		{"sst truncated", func(d string) { truncate(t, tablePath(d, 1), size/2) }, "000002.sst"},
		{"sst truncated by a byte", func(d string) { truncate(t, tablePath(d, 1), size-1) }, "000002.sst"},
		{"sst empty", func(d string) { truncate(t, tablePath(d, 1), 0) }, "000002.sst"},
		{"sst deleted", func(d string) { _ = os.Remove(tablePath(d, 1)) }, "000002.sst"},
		{"manifest garbled magic", func(d string) { overwrite(t, filepath.Join(d, manifestName), 0, 4, rng) }, manifestName},
		{"manifest garbled record", func(d string) { overwrite(t, filepath.Join(d, manifestName), 12, 3, rng) }, manifestName},
		{"manifest truncated mid-record", func(d string) { truncate(t, filepath.Join(d, manifestName), manifestSize-3) }, manifestName},
		{"manifest truncated to its header", func(d string) { truncate(t, filepath.Join(d, manifestName), 8) }, manifestName},
		{"manifest empty", func(d string) { truncate(t, filepath.Join(d, manifestName), 0) }, manifestName},
		{"manifest deleted", func(d string) { _ = os.Remove(filepath.Join(d, manifestName)) }, manifestName},
		{"vlog header", func(d string) { overwrite(t, filepath.Join(d, "000003.vlog"), 0, 8, rng) }, "000003.vlog"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyDir(t, pristine)
			tc.damage(dir)
			before := snapshotDir(t, dir)
			_, err := openNoPanic(t, dir, Options{})
			wantCorrupt(t, err, tc.file)
			if after := snapshotDir(t, dir); after != before {
				t.Fatalf("Open changed a damaged store's files:\nbefore %s\nafter  %s", before, after)
			}
			if err := Verify(dir); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Verify: %v", err)
			}
		})
	}
	t.Run("undamaged copy opens with all data", func(t *testing.T) {
		dir := copyDir(t, pristine)
		if err := Verify(dir); err != nil {
			t.Fatalf("Verify of a sound store: %v", err)
		}
		db, err := openNoPanic(t, dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		checkRounds(t, db, 0, 1, 2)
	})
}

// snapshotDir names every file with its size and a checksum of its bytes.
func snapshotDir(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range entries {
		if e.Name() == "LOCK" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		var sum uint64
		for _, c := range data {
			sum = sum*31 + uint64(c)
		}
		fmt.Fprintf(&b, "%s:%d:%x ", e.Name(), len(data), sum)
	}
	return b.String()
}

// TestRandomDamageNeverPanics overwrites random spans of random files of
// a closed store (fixed seed) and opens it: a damaged table is always the
// typed error naming it; damage elsewhere is the typed error or a clean
// open with every key intact.
func TestRandomDamageNeverPanics(t *testing.T) {
	pristine := buildFixture(t)
	rng := rand.New(rand.NewPCG(14, 2))
	files := []string{"000001.sst", "000002.sst", "000003.sst", manifestName}
	iterations := 60
	if testing.Short() {
		iterations = 15
	}
	for i := range iterations {
		file := files[rng.IntN(len(files))]
		dir := copyDir(t, pristine)
		path := filepath.Join(dir, file)
		size := fileSize(t, path)
		off := rng.Int64N(size)
		n := 1 + rng.IntN(64)
		truncated := rng.IntN(4) == 0
		if truncated {
			truncate(t, path, off)
		} else {
			overwrite(t, path, off, n, rng)
		}
		t.Run(fmt.Sprintf("%02d-%s-at-%d-trunc-%v", i, file, off, truncated), func(t *testing.T) {
			db, err := openNoPanic(t, dir, Options{})
			switch {
			case strings.HasSuffix(file, tableExt):
				wantCorrupt(t, err, file)
			case err != nil:
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("got %v, want ErrCorrupt", err)
				}
			default:
				checkRounds(t, db, 0, 1, 2)
			}
		})
	}
}

func TestSalvageMovesDamageAsideAndKeepsTheRest(t *testing.T) {
	pristine := buildFixture(t)
	rng := rand.New(rand.NewPCG(14, 3))
	now := time.Date(2026, 12, 1, 10, 30, 0, 0, time.UTC)
	t.Run("damaged table", func(t *testing.T) {
		dir := copyDir(t, pristine)
		overwrite(t, tablePath(dir, 1), -100, 50, rng)
		db, err := openNoPanic(t, dir, Options{Salvage: true})
		if err != nil {
			t.Fatalf("Open with Salvage: %v", err)
		}
		checkRounds(t, db, 0, 2)
		folders, _ := filepath.Glob(dir + ".salvaged-*")
		if len(folders) != 1 {
			t.Fatalf("salvage folders: %v", folders)
		}
		folder := folders[0]
		for _, f := range []string{"000002.sst", manifestName} {
			if _, err := os.Stat(filepath.Join(folder, f)); err != nil {
				t.Fatalf("%s not kept in the salvage folder: %v", f, err)
			}
		}
		if err := db.PutSummary("after", []byte("after salvage"), fixtureExpiry); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		db, err = openNoPanic(t, dir, Options{})
		if err != nil {
			t.Fatalf("reopen after salvage: %v", err)
		}
		checkRounds(t, db, 0, 2)
	})
	t.Run("unreadable manifest", func(t *testing.T) {
		dir := copyDir(t, pristine)
		overwrite(t, filepath.Join(dir, manifestName), 0, 8, rng)
		rep, err := Salvage(dir, now)
		if err != nil {
			t.Fatal(err)
		}
		if rep.TablesKept != fixtureRounds || len(rep.Moved) != 1 || rep.Moved[0] != manifestName {
			t.Fatalf("report %+v", rep)
		}
		db, err := openNoPanic(t, dir, Options{})
		if err != nil {
			t.Fatalf("Open after Salvage: %v", err)
		}
		checkRounds(t, db, 0, 1, 2)
	})
	t.Run("sound store untouched", func(t *testing.T) {
		dir := copyDir(t, pristine)
		before := snapshotDir(t, dir)
		rep, err := Salvage(dir, now)
		if err != nil || rep.Folder != "" || len(rep.Moved) != 0 {
			t.Fatalf("Salvage of a sound store: %+v %v", rep, err)
		}
		if after := snapshotDir(t, dir); after != before {
			t.Fatal("Salvage changed a sound store")
		}
	})
}
