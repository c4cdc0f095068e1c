// Package store is the node's durable state: a badger v4 database under the
// node's home with typed access to what the node must remember across
// restarts (known peers, leases, jobs, vouchers, receipts, chain entries).
//
// The database carries a schema version key. Opening a database written by a
// newer schema, a database another process holds, or a corrupt one fails with
// a clear, typed error and never rewrites what is on disk.
//
// Damage. Before badger reads a directory, Open checks it the way badger
// will (verify.go): the MANIFEST replays, every table it names exists and
// passes its index and block checksums, the memtable logs are damaged at
// most in a torn tail, KEYREGISTRY reads. Damage is a *CorruptError
// (errors.Is ErrCorrupt) naming the file, never a panic; a recover around
// badger.Open is the last line. Salvage (Options.Salvage, the daemon's
// --salvage-store) moves the damaged files into <dir>.salvaged-<time> and
// opens what is left.
//
// Disk space. Every write first checks the filesystem's free space and is
// refused with a *LowSpaceError (errors.Is ErrDiskFull) below
// Options.LowSpaceMiB; DB.FreeSpace reports it for a provider to stop
// bidding. Memtable logs are allocated up front and a headroom file is
// released before badger's Open and Close, so a full disk is an error,
// never a SIGBUS in badger's mapped files (space.go).
package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
)

// SchemaVersion is the version of the key layout this build reads and writes.
// Bump it with a migration when a key or value format changes.
const SchemaVersion uint32 = 1

var schemaKey = []byte("meta/schema")

// Sentinel errors returned by Open.
var (
	// ErrLocked means another process (usually a running daemon) holds the
	// database.
	ErrLocked = errors.New("store is locked by another process")
	// ErrCorrupt means badger could not read the files on disk.
	ErrCorrupt = errors.New("store is corrupt or unreadable")
	// ErrSchema means the database was written by an incompatible schema.
	ErrSchema = errors.New("store schema version mismatch")
	// ErrClosed is returned by operations on a closed store.
	ErrClosed = errors.New("store is closed")
)

// Options tune Open. The zero value is a durable on-disk store.
type Options struct {
	// Logger receives badger's own log lines at debug level (warnings and
	// errors keep their level). Nil discards them.
	Logger *slog.Logger
	// InMemory keeps everything in RAM; dir is ignored. For tests only.
	InMemory bool
	// Salvage moves damaged files aside (see Salvage) before opening,
	// instead of failing with ErrCorrupt. It is the operator's choice
	// (--salvage-store), never a default: what is moved is lost to the node.
	Salvage bool
	// LowSpaceMiB is the free space below which writes are refused with
	// ErrDiskFull; 0 means DefaultLowSpaceMiB, a negative value turns the
	// gate off.
	LowSpaceMiB int64
}

// DB is an open store. It is safe for concurrent use.
type DB struct {
	db        *badger.DB
	log       *slog.Logger
	space     *spaceGate // nil in memory
	uptimes   uptimeRows // uptime.go
	closeOnce sync.Once
	closeErr  error
}

func badgerOptions(dir string, logger *slog.Logger) badger.Options {
	return badger.DefaultOptions(dir).
		WithLogger(badgerLogger{logger}).
		// Small values and a small node: keep memory modest so a provider
		// daemon stays light next to the GPU jobs it hosts. Badger allocates
		// the memtable arena up front, so its size is the store's floor;
		// its log is twice that on disk, which is headroom a full disk
		// must still have (see space.go).
		WithMemTableSize(memTableBytes).
		// Values above the threshold go to the value log; it must stay
		// below badger's batch limit (15% of the memtable). Value log
		// files are mapped at twice their size: 8 MiB keeps that small
		// and still holds a maxRecord value.
		WithValueThreshold(256 << 10).
		WithValueLogFileSize(8 << 20).
		WithNumVersionsToKeep(1).
		// Each compactor polls the levels every 50 ms, store busy or not:
		// badger's default 4 woke an idle daemon 80 times a second. 2 is
		// badger's minimum (worker 0 keeps L0 and L1 moving) and plenty
		// for a store this small.
		WithNumCompactors(2).
		WithBlockCacheSize(16 << 20).
		WithIndexCacheSize(8 << 20).
		// Open verifies every block once (verify.go); checking each block
		// read from disk afterwards turns later damage into an error
		// instead of garbage, for one CRC per cache miss.
		WithChecksumVerificationMode(options.OnBlockRead)
}

// Open opens (creating if needed) the store in dir.
func Open(dir string, opts Options) (*DB, error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	bopts := badgerOptions(dir, logger)
	if opts.InMemory {
		bopts = bopts.WithInMemory(true).WithDir("").WithValueDir("")
	} else if err := prepareDir(dir, opts, logger); err != nil {
		return nil, err
	}
	bdb, err := openBadger(bopts)
	if err != nil {
		return nil, classifyOpenError(dir, err)
	}
	db := &DB{db: bdb, log: logger}
	if !opts.InMemory {
		reserveLogs(dir)
		if err := takeBallast(dir); err != nil {
			logger.Warn("store: running without headroom; writes are refused until space returns", "err", err)
		}
		db.space = &spaceGate{dir: dir, low: lowSpaceBytes(opts.LowSpaceMiB)}
	}
	if err := db.checkSchema(); err != nil {
		_ = bdb.Close()
		return nil, err
	}
	return db, nil
}

func classifyOpenError(dir string, err error) error {
	msg := err.Error()
	switch {
	case errors.Is(err, ErrLocked), strings.Contains(msg, "Cannot acquire directory lock"):
		return fmt.Errorf("store.Open %s: %w (is another idlegrid daemon running with this home?): %v", dir, ErrLocked, err)
	case errors.Is(err, os.ErrPermission):
		return fmt.Errorf("store.Open %s: %w", dir, err)
	case errors.Is(err, ErrCorrupt):
		return fmt.Errorf("store.Open %s: %w %s", dir, err, corruptHint)
	default:
		// Badger reports damaged MANIFEST, SST and value-log files with a
		// variety of messages; all of them mean "cannot read what is there".
		// We never repair or delete automatically: the operator decides.
		return fmt.Errorf("store.Open %s: %w: %v %s", dir, ErrCorrupt, err, corruptHint)
	}
}

// corruptHint ends every ErrCorrupt from Open.
const corruptHint = "(the files are left untouched; start with --salvage-store to move the damaged files aside, or move the directory aside to start fresh)"

// prepareDir creates an on-disk store's directory and checks it before
// badger reads it: the lock first (a running daemon's files are in flux),
// then, after an opt-in salvage, every table, the MANIFEST and the log
// headers, so damage is a CorruptError naming the file and never a panic
// inside badger.
func prepareDir(dir string, opts Options, logger *slog.Logger) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("store.Open: create %s: %w", dir, err)
	}
	if err := tryLockDir(dir); err != nil {
		return classifyOpenError(dir, err)
	}
	if opts.Salvage {
		rep, err := Salvage(dir, time.Now())
		if err != nil {
			return fmt.Errorf("store.Open: %w", err)
		}
		if len(rep.Moved) > 0 {
			logger.Warn("store salvaged: damaged files moved aside", "dir", dir, "to", rep.Folder, "files", rep.Moved, "tables_kept", rep.TablesKept)
		}
	}
	if err := Verify(dir); err != nil {
		return fmt.Errorf("store.Open %s: %w %s", dir, err, corruptHint)
	}
	// Badger's Open flushes replayed memtables and maps a new log: give
	// it the ballast's space, and refuse rather than fault without it.
	if err := releaseBallast(dir); err != nil {
		return fmt.Errorf("store.Open: %w", err)
	}
	if err := needFree(dir, minOpenBytes); err != nil {
		return fmt.Errorf("store.Open: %w", err)
	}
	return nil
}

// openBadger opens badger and turns a panic inside it into ErrCorrupt: the
// last line behind Verify, for damage it does not know. A panic leaves
// what badger had opened (its directory lock among them) to the process's
// exit.
func openBadger(bopts badger.Options) (db *badger.DB, err error) {
	defer func() {
		if r := recover(); r != nil {
			db, err = nil, fmt.Errorf("%w: badger panicked while opening: %v", ErrCorrupt, r)
		}
	}()
	return badger.Open(bopts)
}

// Verify checks a closed store directory without opening it: the MANIFEST
// replays, every table it names exists and passes its checksums, and no
// log file header is foreign. Damage is a *CorruptError naming the first
// damaged file; a directory another process holds is ErrLocked.
func Verify(dir string) error {
	if err := tryLockDir(dir); err != nil {
		if errors.Is(err, ErrLocked) {
			return err
		}
		return fmt.Errorf("store.Verify: %w", err)
	}
	res, err := checkDir(dir, false)
	if err != nil {
		return fmt.Errorf("store.Verify: %w", err)
	}
	if len(res.damaged) > 0 {
		return res.damaged[0]
	}
	return nil
}

func (d *DB) checkSchema() error {
	return d.db.Update(func(txn *badger.Txn) error {
		item, err := txn.Get(schemaKey)
		if errors.Is(err, badger.ErrKeyNotFound) {
			var buf [4]byte
			binary.BigEndian.PutUint32(buf[:], SchemaVersion)
			return txn.Set(schemaKey, buf[:])
		}
		if err != nil {
			return fmt.Errorf("store.Open: read schema version: %w: %v", ErrCorrupt, err)
		}
		return item.Value(func(v []byte) error {
			if len(v) != 4 {
				return fmt.Errorf("store.Open: schema key holds %d bytes: %w", len(v), ErrCorrupt)
			}
			if got := binary.BigEndian.Uint32(v); got != SchemaVersion {
				return fmt.Errorf("store.Open: database schema %d, this build reads %d: %w", got, SchemaVersion, ErrSchema)
			}
			return nil
		})
	})
}

// Close flushes and closes the database. It is idempotent.
func (d *DB) Close() error {
	d.closeOnce.Do(func() {
		if d.space != nil {
			// The flush in badger's Close needs room even on a full disk.
			if err := releaseBallast(d.space.dir); err != nil {
				d.log.Warn("store.Close", "err", err)
			}
		}
		if err := d.db.Close(); err != nil {
			d.closeErr = fmt.Errorf("store.Close: %w", err)
		}
	})
	return d.closeErr
}

// Path returns the directory of an on-disk store ("" in memory).
func (d *DB) Path() string {
	return filepath.Clean(d.db.Opts().Dir)
}

func (d *DB) update(fn func(txn *badger.Txn) error) error {
	if d.db.IsClosed() {
		return ErrClosed
	}
	if err := d.space.admit(); err != nil {
		return err
	}
	return d.db.Update(fn)
}

func (d *DB) view(fn func(txn *badger.Txn) error) error {
	if d.db.IsClosed() {
		return ErrClosed
	}
	return d.db.View(fn)
}

// badgerLogger routes badger's printf-style logging into slog. Badger is
// chatty at info level, so its info lines go to debug.
type badgerLogger struct{ l *slog.Logger }

func (b badgerLogger) Errorf(f string, a ...any) {
	b.l.Error(strings.TrimSpace(fmt.Sprintf(f, a...)), "component", "badger")
}
func (b badgerLogger) Warningf(f string, a ...any) {
	b.l.Warn(strings.TrimSpace(fmt.Sprintf(f, a...)), "component", "badger")
}
func (b badgerLogger) Infof(f string, a ...any) {
	b.l.Debug(strings.TrimSpace(fmt.Sprintf(f, a...)), "component", "badger")
}
func (b badgerLogger) Debugf(f string, a ...any) {
	b.l.Debug(strings.TrimSpace(fmt.Sprintf(f, a...)), "component", "badger")
}
