package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/table"
)

// CorruptError is the ErrCorrupt that names the damaged file. errors.Is(err,
// ErrCorrupt) holds for it; errors.As gives the file.
type CorruptError struct {
	// File is the damaged (or missing) file's path.
	File string
	// Reason says what is wrong with it.
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("%v: %s: %s", ErrCorrupt, e.File, e.Reason)
}

// Is makes a CorruptError match ErrCorrupt.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// Badger's file names in a store directory.
const (
	manifestName = badger.ManifestFilename // "MANIFEST"
	registryName = badger.KeyRegistryFileName
	tableExt     = ".sst"
	memExt       = ".mem" // memtable write-ahead logs
	vlogExt      = ".vlog"
	// logHeaderSize is the header of a .mem or .vlog file: the encryption
	// key ID (u64, 0 when unencrypted) and a 12-byte IV.
	logHeaderSize = 20
)

// tableInfo is one table the MANIFEST names.
type tableInfo struct {
	id          uint64
	level       uint8
	compression options.CompressionType
}

// dirCheck is what checkDir learned about a store directory.
type dirCheck struct {
	// damaged lists every damaged file found (checkDir stops at the first
	// unless asked for all).
	damaged []*CorruptError
	// tables are the tables the MANIFEST names, by ID; nil when the
	// MANIFEST is unreadable.
	tables map[uint64]tableInfo
	// good are the tables present on disk that verify, with the
	// compression they verify under.
	good map[uint64]options.CompressionType
	// manifestBad means the MANIFEST itself is damaged.
	manifestBad bool
	// truncateLogs are the memtable logs damaged in the middle, with where
	// badger's replay will cut them.
	truncateLogs map[string]int
}

// checkDir reads a closed store directory the way badger's Open will, and
// reports damage as CorruptErrors instead of the panics and silent
// deletions badger would produce: a MANIFEST that does not replay, a table
// it names that is missing or fails its checksums, a MANIFEST missing or torn
// while tables exist (badger would delete the tables it no longer names),
// and log files whose header is not ours. It stops at the first damage
// unless all is set. It only reads.
func checkDir(dir string, all bool) (*dirCheck, error) {
	res := &dirCheck{good: map[uint64]options.CompressionType{}, truncateLogs: map[string]int{}}
	bad := func(name, format string, a ...any) bool {
		res.damaged = append(res.damaged, &CorruptError{File: filepath.Join(dir, name), Reason: fmt.Sprintf(format, a...)})
		return !all
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", dir, err)
	}
	var onDisk []uint64
	var logs []string
	for _, e := range entries {
		name := e.Name()
		switch {
		case strings.HasSuffix(name, tableExt):
			if id, ok := table.ParseFileID(name); ok {
				onDisk = append(onDisk, id)
			}
		case strings.HasSuffix(name, memExt), strings.HasSuffix(name, vlogExt):
			logs = append(logs, name)
		}
	}
	slices.Sort(onDisk)

	tables, torn, merr := replayManifest(dir)
	switch {
	case errors.Is(merr, os.ErrNotExist):
		if len(onDisk) > 0 && bad(manifestName, "missing while %d tables exist (badger would delete them all)", len(onDisk)) {
			return res, nil
		}
		res.manifestBad = len(onDisk) > 0
	case merr != nil:
		res.manifestBad = true
		if bad(manifestName, "%v", merr) {
			return res, nil
		}
	default:
		res.tables = tables
		if torn {
			// A torn last record is what a crash mid-append leaves, and
			// badger drops it. If it named tables that exist, dropping it
			// makes badger delete them: that is damage, not a crash.
			var orphans []string
			for _, id := range onDisk {
				if _, ok := tables[id]; !ok {
					orphans = append(orphans, table.IDToFilename(id))
				}
			}
			if len(orphans) > 0 {
				res.manifestBad = true
				if bad(manifestName, "ends in a torn record while tables it does not name exist (%s)", strings.Join(orphans, ", ")) {
					return res, nil
				}
			}
		}
	}

	var orphans []uint64
	var newestNamed uint64
	for _, id := range onDisk {
		info, named := tables[id]
		if res.tables != nil && !named && !res.manifestBad {
			orphans = append(orphans, id)
			continue
		}
		c, version, err := checkTableFile(dir, id, info, named)
		if err != nil {
			if bad(table.IDToFilename(id), "%v", err) {
				return res, nil
			}
			continue
		}
		res.good[id] = c
		newestNamed = max(newestNamed, version)
	}
	// Badger deletes the tables the MANIFEST does not name, rightly for
	// what a flush or compaction cut short left behind. A leftover holds
	// nothing newer than the named tables, unless its writes are still in
	// a memtable log (.mem) that badger replays. Anything else means the
	// MANIFEST lost records: keep the tables and report it.
	hasMem := slices.ContainsFunc(logs, func(n string) bool { return strings.HasSuffix(n, memExt) })
	for _, id := range orphans {
		if hasMem {
			break
		}
		c, version, err := checkTableFile(dir, id, tableInfo{}, false)
		if err != nil || version <= newestNamed {
			continue
		}
		res.manifestBad = true
		res.good[id] = c
		if bad(manifestName, "does not name %s, which holds writes newer than every table it names (badger would delete it)", table.IDToFilename(id)) {
			return res, nil
		}
	}
	for id := range tables {
		if _, ok := slices.BinarySearch(onDisk, id); !ok {
			if bad(table.IDToFilename(id), "named by the MANIFEST but missing") {
				return res, nil
			}
		}
	}
	if reason := checkKeyRegistry(dir); reason != "" {
		if bad(registryName, "%s", reason) {
			return res, nil
		}
	}
	slices.Sort(logs)
	for _, name := range logs {
		lc, err := checkLogFile(filepath.Join(dir, name), strings.HasSuffix(name, memExt))
		switch {
		case err != nil:
			lc.reason = fmt.Sprintf("unreadable: %v", err)
		case lc.reason != "" && lc.validEnd > 0:
			res.truncateLogs[name] = lc.validEnd
		}
		if lc.reason != "" && bad(name, "%s", lc.reason) {
			return res, nil
		}
	}
	return res, nil
}

// checkTableFile verifies one table file, under the compression the
// MANIFEST records or, for a table it does not name, the one it verifies
// under, and returns that compression and the table's newest version.
func checkTableFile(dir string, id uint64, info tableInfo, named bool) (options.CompressionType, uint64, error) {
	data, err := os.ReadFile(filepath.Join(dir, table.IDToFilename(id)))
	if err != nil {
		return 0, 0, fmt.Errorf("unreadable: %w", err)
	}
	c := info.compression
	if !named {
		if c, err = guessCompression(data); err != nil {
			return 0, 0, err
		}
	}
	version, err := verifyTable(data, c)
	return c, version, err
}

// replayManifest reads the MANIFEST with badger's own replay, which only
// reads, and reports whether its last record is torn.
func replayManifest(dir string) (map[uint64]tableInfo, bool, error) {
	path := filepath.Join(dir, manifestName)
	f, err := os.Open(path)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, false, err
	}
	m, end, err := replaySafely(f)
	if err != nil {
		return nil, false, err
	}
	tables := make(map[uint64]tableInfo, len(m.Tables))
	for id, t := range m.Tables {
		tables[id] = tableInfo{id: id, level: t.Level, compression: t.Compression}
	}
	return tables, end < st.Size(), nil
}

func replaySafely(f *os.File) (m badger.Manifest, end int64, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("does not replay: %v", r)
		}
	}()
	m, end, err = badger.ReplayManifestFile(f, 0, badger.DefaultOptions("").WithLogger(nil))
	if err != nil {
		return m, end, fmt.Errorf("does not replay: %w", err)
	}
	return m, end, nil
}

// checkLogHeader checks the header of a .mem or .vlog file: badger reads a
// non-zero key ID as an encryption key it does not have. Damage after the
// header is a torn tail, which badger's replay truncates at the last entry
// whose checksum holds: losing only writes that were never synced.
func checkLogHeader(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("unreadable: %v", err)
	}
	defer f.Close()
	var hdr [logHeaderSize]byte
	n, err := f.ReadAt(hdr[:], 0)
	if n < logHeaderSize {
		return "" // shorter than a header: badger re-creates it
	}
	if err != nil {
		return fmt.Sprintf("unreadable: %v", err)
	}
	if key := binary.BigEndian.Uint64(hdr[:8]); key != 0 {
		return fmt.Sprintf("header names encryption key %d; this store is never encrypted", key)
	}
	return ""
}
