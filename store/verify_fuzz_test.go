package store

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/dgraph-io/badger/v4/options"
)

// smallTable builds a store with a few entries, closes it and returns its
// one table's bytes.
func smallTable(f *testing.F) []byte {
	f.Helper()
	dir := filepath.Join(f.TempDir(), "store")
	db, err := Open(dir, Options{})
	if err != nil {
		f.Fatal(err)
	}
	for i := range 50 {
		if err := db.PutSummary(fixtureKey(0, i), []byte(fixtureValue(0, i)), fixtureExpiry); err != nil {
			f.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		f.Fatal(err)
	}
	data, err := os.ReadFile(tablePath(dir, 0))
	if err != nil {
		f.Fatal(err)
	}
	return data
}

// FuzzVerifyTable: any bytes are a verdict, never a panic, and a table
// that verifies is one badger wrote (the seed) or a no-op change of it.
func FuzzVerifyTable(f *testing.F) {
	table := smallTable(f)
	f.Add(table)
	f.Add(table[:len(table)/2])
	f.Add(table[len(table)-40:])
	f.Add([]byte{})
	f.Add([]byte{0, 0, 0, 4, 1, 2, 3, 4})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<20 {
			return
		}
		for _, c := range []options.CompressionType{options.None, options.Snappy, options.ZSTD} {
			_, _ = verifyTable(data, c)
		}
	})
}

// FuzzCheckMemLog: a log image is walked without panicking and the valid
// end never passes the data.
func FuzzCheckMemLog(f *testing.F) {
	f.Add(make([]byte, 64))
	f.Add([]byte("short"))
	hdr := make([]byte, logHeaderSize)
	f.Add(append(hdr, 0x40, 0, 3, 1, 0, 'k', 'e', 'y', 'v', 1, 2, 3, 4))
	f.Add(append(hdr, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<20 {
			return
		}
		lc := checkMemLog(data)
		if lc.validEnd > len(data) {
			t.Fatalf("valid end %d past %d bytes", lc.validEnd, len(data))
		}
	})
}
