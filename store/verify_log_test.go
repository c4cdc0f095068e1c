package store

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// crashImage copies a store's files while it is open, after a synced
// write: what a kill -9 leaves. It returns the image and the name and
// valid length of its memtable log.
func crashImage(t *testing.T) (img, mem string, end int) {
	t.Helper()
	src := filepath.Join(t.TempDir(), "store")
	db, err := Open(src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range fixturePerRond {
		if err := db.PutSummary(fixtureKey(0, i), []byte(fixtureValue(0, i)), fixtureExpiry); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.SetCapacitySeq(7); err != nil { // syncs
		t.Fatal(err)
	}
	img = copyDir(t, src)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	_ = os.Remove(filepath.Join(img, "LOCK"))
	mems, _ := filepath.Glob(filepath.Join(img, "*"+memExt))
	if len(mems) != 1 {
		t.Fatalf("crash image holds %d memtable logs, want 1", len(mems))
	}
	data, err := os.ReadFile(mems[0])
	if err != nil {
		t.Fatal(err)
	}
	lc := checkMemLog(data)
	if lc.reason != "" || lc.validEnd <= logHeaderSize || nonZeroAfter(data, lc.validEnd) >= 0 {
		t.Fatalf("sound log reads as %+v", lc)
	}
	return img, filepath.Base(mems[0]), lc.validEnd
}

func checkSynced(t *testing.T, db *DB) {
	t.Helper()
	checkRounds(t, db, 0)
	if seq, err := db.CapacitySeq(); err != nil || seq != 7 {
		t.Fatalf("synced capacity seq: %d %v", seq, err)
	}
}

func TestCrashImageLogDamage(t *testing.T) {
	img, mem, end := crashImage(t)
	rng := rand.New(rand.NewPCG(14, 4))
	size := fileSize(t, filepath.Join(img, mem))
	cases := []struct {
		name    string
		damage  func(dir string)
		file    string // "" when the store must open with the synced data, "either" when that or the typed error
		salvage bool   // Salvage keeps every synced write
	}{
		{"no damage", func(string) {}, "", true},
		{"torn entry after the last", func(d string) {
			// A write cut short: a valid-looking prefix, then zeros.
			overwrite(t, filepath.Join(d, mem), int64(end), 1, rng)
		}, "", true},
		{"garbage far past the end", func(d string) { overwrite(t, filepath.Join(d, mem), -4096, 4096, rng) }, "", true},
		{"garbage tail right after the last entry", func(d string) { overwrite(t, filepath.Join(d, mem), int64(end), 300, rng) }, "either", true},
		{"bytes in the middle", func(d string) { overwrite(t, filepath.Join(d, mem), int64(end/2), 8, rng) }, mem, false},
		{"cut in the middle", func(d string) { truncate(t, filepath.Join(d, mem), int64(end/2)+3) }, mem, false},
		{"cut below the header", func(d string) { truncate(t, filepath.Join(d, mem), 10) }, mem, false},
		{"empty", func(d string) { truncate(t, filepath.Join(d, mem), 0) }, mem, false},
		{"foreign header", func(d string) { overwrite(t, filepath.Join(d, mem), 0, 8, rng) }, mem, false},
		{"garbled key registry", func(d string) { overwrite(t, filepath.Join(d, registryName), 16, 12, rng) }, registryName, true},
		{"garbage over DISCARD", func(d string) { overwrite(t, filepath.Join(d, "DISCARD"), 0, 4096, rng) }, "", true},
	}
	if size < int64(end)+4096 {
		t.Fatalf("log of %d bytes, entries up to %d", size, end)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyDir(t, img)
			tc.damage(dir)
			db, err := openNoPanic(t, dir, Options{})
			if tc.file == "either" && err != nil {
				tc.file = mem
			}
			if tc.file == "" || tc.file == "either" {
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				checkSynced(t, db)
				return
			}
			wantCorrupt(t, err, tc.file)
			db, err = openNoPanic(t, dir, Options{Salvage: true})
			if err != nil {
				t.Fatalf("Open with Salvage: %v", err)
			}
			if tc.salvage {
				checkSynced(t, db)
			}
		})
	}
}

func TestCheckMemLogNeverPanics(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 5))
	for range 2000 {
		b := make([]byte, rng.IntN(200))
		for i := range b {
			if rng.IntN(3) == 0 {
				b[i] = byte(rng.Uint32())
			}
		}
		lc := checkMemLog(b)
		if lc.validEnd > len(b) {
			t.Fatalf("valid end %d past %d bytes", lc.validEnd, len(b))
		}
	}
	if _, err := Salvage(filepath.Join(t.TempDir(), "absent"), fixtureExpiry); err == nil || errors.Is(err, ErrCorrupt) {
		t.Fatalf("Salvage of a missing directory: %v", err)
	}
}
