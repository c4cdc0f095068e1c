package store

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"testing"

	badger "github.com/dgraph-io/badger/v4"
)

// benchStoreMiB sizes the store BenchmarkOpen opens.
const benchStoreMiB = 32

// buildBenchStore writes benchStoreMiB of incompressible 1 KiB summaries
// and closes the store, leaving it in tables.
func buildBenchStore(b *testing.B) string {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "store")
	db, err := Open(dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(14, 6))
	value := make([]byte, 1024)
	for i := range benchStoreMiB << 10 {
		for j := range value {
			value[j] = byte(rng.Uint32())
		}
		if err := db.PutSummary(fmt.Sprintf("s%07d", i), value, fixtureExpiry); err != nil {
			b.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	return dir
}

// BenchmarkOpen measures opening a closed store of benchStoreMiB: the
// file check alone, badger's own open without it, and Open (check, badger,
// headroom) with Close.
func BenchmarkOpen(b *testing.B) {
	dir := buildBenchStore(b)
	b.Run("verify", func(b *testing.B) {
		for b.Loop() {
			if err := Verify(dir); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("badger-only", func(b *testing.B) {
		for b.Loop() {
			bdb, err := badger.Open(badgerOptions(dir, slog.New(slog.DiscardHandler)))
			if err != nil {
				b.Fatal(err)
			}
			if err := bdb.Close(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("store-open-close", func(b *testing.B) {
		for b.Loop() {
			db, err := Open(dir, Options{})
			if err != nil {
				b.Fatal(err)
			}
			if err := db.Close(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkWrite measures one unsynced and one synced lease write with the
// free-space gate on (the default) and off.
func BenchmarkWrite(b *testing.B) {
	for _, gate := range []struct {
		name string
		mib  int64
	}{{"gate", 0}, {"no-gate", -1}} {
		for _, sync := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/sync=%v", gate.name, sync), func(b *testing.B) {
				db, err := Open(filepath.Join(b.TempDir(), "store"), Options{LowSpaceMiB: gate.mib})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = db.Close() })
				l := lease("bench")
				i := 0
				for b.Loop() {
					i++
					l.Version = uint64(i)
					var err error
					if sync {
						err = db.PutLease(l)
					} else {
						err = db.putJSON("bench", leasePrefix+l.ID, l, false)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkGate measures the free-space check alone (one statfs).
func BenchmarkGate(b *testing.B) {
	g := &spaceGate{dir: b.TempDir(), low: 1 << 20}
	for b.Loop() {
		if err := g.admit(); err != nil {
			b.Fatal(err)
		}
	}
}
