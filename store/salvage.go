package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/dgraph-io/badger/v4/pb"
	"github.com/dgraph-io/badger/v4/y"
	"google.golang.org/protobuf/proto"
)

// SalvageReport says what Salvage did.
type SalvageReport struct {
	// Folder holds the files moved aside ("" when nothing was damaged).
	Folder string
	// Moved are the names of the files moved into Folder.
	Moved []string
	// TablesKept is how many tables the rewritten MANIFEST names.
	TablesKept int
}

// Salvage makes a damaged store directory openable, losing only what the
// damaged files held: it moves every damaged table, log file and MANIFEST
// into a dated folder beside the store (<dir>.salvaged-<UTC time>) and, if a
// table was lost or the MANIFEST was damaged, writes a new MANIFEST naming
// every table that still verifies (at its old level, or at level 0 when the
// old MANIFEST is unreadable). Nothing is deleted. An undamaged store is
// left as it is. It is never run implicitly: see Options.Salvage.
func Salvage(dir string, now time.Time) (SalvageReport, error) {
	var rep SalvageReport
	if err := tryLockDir(dir); err != nil {
		return rep, fmt.Errorf("store.Salvage %s: %w", dir, err)
	}
	res, err := checkDir(dir, true)
	if err != nil {
		return rep, fmt.Errorf("store.Salvage: %w", err)
	}
	if len(res.damaged) == 0 {
		return rep, nil
	}
	folder, err := salvageFolder(dir, now)
	if err != nil {
		return rep, fmt.Errorf("store.Salvage: %w", err)
	}
	rep.Folder = folder
	rewrite := res.manifestBad
	for _, d := range res.damaged {
		if filepath.Ext(d.File) == tableExt {
			rewrite = true
		}
		if filepath.Base(d.File) == manifestName {
			continue // moved below, after its replacement is written
		}
		if end, ok := res.truncateLogs[filepath.Base(d.File)]; ok {
			// Keep a copy and cut the log where badger's replay would:
			// the writes before the damage survive.
			if err := copyAsideAndTruncate(d.File, folder, int64(end)); err != nil {
				return rep, fmt.Errorf("store.Salvage: %w", err)
			}
			rep.Moved = append(rep.Moved, filepath.Base(d.File))
			continue
		}
		moved, err := moveAside(d.File, folder)
		if err != nil {
			return rep, fmt.Errorf("store.Salvage: %w", err)
		}
		if moved {
			rep.Moved = append(rep.Moved, filepath.Base(d.File))
		}
	}
	if !rewrite {
		return rep, nil
	}
	kept, err := rewriteManifest(dir, folder, res)
	if err != nil {
		return rep, fmt.Errorf("store.Salvage: %w", err)
	}
	rep.TablesKept = kept
	rep.Moved = append(rep.Moved, manifestName)
	return rep, nil
}

func salvageFolder(dir string, now time.Time) (string, error) {
	base := filepath.Clean(dir) + ".salvaged-" + now.UTC().Format("20060102T150405Z")
	folder := base
	for i := 2; ; i++ {
		err := os.Mkdir(folder, 0o700)
		if err == nil {
			return folder, nil
		}
		if !errors.Is(err, os.ErrExist) || i > 100 {
			return "", fmt.Errorf("create %s: %w", folder, err)
		}
		folder = fmt.Sprintf("%s-%d", base, i)
	}
}

// moveAside renames path into folder; a file that is not there (a table the
// MANIFEST names but nobody has) is not an error.
func moveAside(path, folder string) (bool, error) {
	err := os.Rename(path, filepath.Join(folder, filepath.Base(path)))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("move %s aside: %w", path, err)
	}
	return true, nil
}

// manifestMagicVersion is badger v4's MANIFEST format version (manifest.go,
// badgerMagicVersion); a test opens a rewritten MANIFEST with badger.
const manifestMagicVersion = 8

// rewriteManifest writes a MANIFEST naming every table that verified, in
// one change set, the way badger's own rewrite does, then moves the old
// one (if any) into folder.
func rewriteManifest(dir, folder string, res *dirCheck) (int, error) {
	ids := make([]uint64, 0, len(res.good))
	for id := range res.good {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var set pb.ManifestChangeSet
	for _, id := range ids {
		level := uint32(0)
		if info, ok := res.tables[id]; ok && !res.manifestBad {
			level = uint32(info.level)
		}
		set.Changes = append(set.Changes, &pb.ManifestChange{
			Id: id, Op: pb.ManifestChange_CREATE, Level: level, Compression: uint32(res.good[id]),
		})
	}
	body, err := proto.Marshal(&set)
	if err != nil {
		return 0, fmt.Errorf("encode manifest: %w", err)
	}
	buf := make([]byte, 0, 16+len(body))
	buf = append(buf, 'B', 'd', 'g', 'r')
	buf = binary.BigEndian.AppendUint16(buf, 0) // external magic
	buf = binary.BigEndian.AppendUint16(buf, manifestMagicVersion)
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(body)))
	buf = binary.BigEndian.AppendUint32(buf, crc32.Checksum(body, y.CastagnoliCrcTable))
	buf = append(buf, body...)

	tmp := filepath.Join(dir, "MANIFEST-SALVAGE")
	if err := writeSynced(tmp, buf); err != nil {
		return 0, err
	}
	path := filepath.Join(dir, manifestName)
	if _, err := moveAside(path, folder); err != nil {
		return 0, err
	}
	// The old MANIFEST, if there was one, is in folder now.
	if err := os.Rename(tmp, path); err != nil {
		return 0, fmt.Errorf("install new manifest: %w", err)
	}
	if err := syncDir(dir); err != nil {
		return 0, err
	}
	return len(ids), nil
}

func copyAsideAndTruncate(path, folder string, end int64) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := writeSynced(filepath.Join(folder, filepath.Base(path)), data); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	// Zero the damaged rest rather than shrink the file: badger maps a
	// memtable log at its full size.
	if _, err := f.WriteAt(make([]byte, int64(len(data))-end), end); err != nil {
		return fmt.Errorf("cut %s at %d: %w", path, end, err)
	}
	return f.Sync()
}

func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("sync %s: %w", path, err)
	}
	return f.Close()
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
