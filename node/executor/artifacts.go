package executor

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// Artifacts is a content-addressed store of immutable blobs (WASM modules,
// output tars) keyed by CID. The node backs it with a local directory; a
// network fetcher (bitswap, a peer stream) may implement it later.
// Implementations may return unverified bytes: consumers verify with
// ReadArtifact or NewVerifyingReader, because trust in the store is not
// assumed.
type Artifacts interface {
	// Get returns the blob for id, or an error wrapping ErrNotFound.
	Get(ctx context.Context, id string) (io.ReadCloser, error)
}

// ReadArtifact reads the blob id from a, at most maxBytes of it, and checks
// that it hashes to id.
func ReadArtifact(ctx context.Context, a Artifacts, id string, maxBytes int64) ([]byte, error) {
	if _, err := ParseCID(id); err != nil {
		return nil, fmt.Errorf("executor.ReadArtifact: %w", err)
	}
	rc, err := a.Get(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("executor.ReadArtifact: %w", err)
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, maxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("executor.ReadArtifact: %s: %w", id, err)
	}
	if int64(len(data)) > maxBytes {
		return nil, fmt.Errorf("executor.ReadArtifact: %s: %w: over %d bytes", id, ErrTooLarge, maxBytes)
	}
	if err := VerifyCID(id, data); err != nil {
		return nil, fmt.Errorf("executor.ReadArtifact: %w", err)
	}
	return data, nil
}

// DirArtifacts is an Artifacts store in a directory, one file per CID. Get
// verifies content as it is read, so a corrupted or swapped file fails
// with ErrCIDMismatch instead of being served.
type DirArtifacts struct {
	dir string
}

// NewDirArtifacts opens (creating it if needed) a store in dir.
func NewDirArtifacts(dir string) (*DirArtifacts, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("executor.NewDirArtifacts: %w", err)
	}
	return &DirArtifacts{dir: dir}, nil
}

// path maps a CID to its file. The CID was parsed first, so it holds only
// base32 characters and cannot name a path outside dir.
func (d *DirArtifacts) path(id string) string { return filepath.Join(d.dir, id) }

// Get implements Artifacts.
func (d *DirArtifacts) Get(ctx context.Context, id string) (io.ReadCloser, error) {
	if _, err := ParseCID(id); err != nil {
		return nil, fmt.Errorf("artifacts.Get: %w", err)
	}
	f, err := os.Open(d.path(id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("artifacts.Get: %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("artifacts.Get: %w", err)
	}
	r, err := NewVerifyingReader(f, id)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("artifacts.Get: %w", err)
	}
	return r, nil
}

// Has reports whether the store holds id (without verifying it).
func (d *DirArtifacts) Has(id string) bool {
	if _, err := ParseCID(id); err != nil {
		return false
	}
	_, err := os.Stat(d.path(id))
	return err == nil
}

// Put stores r, at most maxBytes of it (0: no cap), and returns its CID.
// The blob is written to a temporary file and renamed into place, so a
// reader never sees a partial blob.
func (d *DirArtifacts) Put(r io.Reader, maxBytes int64) (string, error) {
	tmp, err := os.CreateTemp(d.dir, ".put-*")
	if err != nil {
		return "", fmt.Errorf("artifacts.Put: %w", err)
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	defer tmp.Close()
	h := sha256.New()
	src := r
	if maxBytes > 0 {
		src = io.LimitReader(r, maxBytes+1)
	}
	n, err := io.Copy(io.MultiWriter(tmp, h), src)
	if err != nil {
		return "", fmt.Errorf("artifacts.Put: %w", err)
	}
	if maxBytes > 0 && n > maxBytes {
		return "", fmt.Errorf("artifacts.Put: %w: over %d bytes", ErrTooLarge, maxBytes)
	}
	if err := tmp.Sync(); err != nil {
		return "", fmt.Errorf("artifacts.Put: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("artifacts.Put: %w", err)
	}
	id := cidFromSum(h.Sum(nil))
	if err := os.Rename(tmp.Name(), d.path(id)); err != nil {
		return "", fmt.Errorf("artifacts.Put: %w", err)
	}
	return id, nil
}

// StoredArtifact is one entry of List.
type StoredArtifact struct {
	CID     string
	Bytes   int64
	AddedAt time.Time
}

// List returns the stored artifacts, newest first (skipping files that
// are not named by a CID, such as a Put in progress).
func (d *DirArtifacts) List() ([]StoredArtifact, error) {
	entries, err := os.ReadDir(d.dir)
	if err != nil {
		return nil, fmt.Errorf("artifacts.List: %w", err)
	}
	var out []StoredArtifact
	for _, e := range entries {
		if _, err := ParseCID(e.Name()); err != nil || !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue // removed meanwhile
		}
		out = append(out, StoredArtifact{CID: e.Name(), Bytes: info.Size(), AddedAt: info.ModTime()})
	}
	slices.SortFunc(out, func(a, b StoredArtifact) int { return b.AddedAt.Compare(a.AddedAt) })
	return out, nil
}

// PutBytes stores data and returns its CID.
func (d *DirArtifacts) PutBytes(data []byte) (string, error) {
	return d.Put(bytes.NewReader(data), 0)
}
