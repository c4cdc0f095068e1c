package executor

import (
	"archive/tar"
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// tarEpoch is the mtime of every tar entry: outputs are addressed by the
// hash of their bytes, so nothing that varies between two identical runs
// (times, owners) may reach the tar.
var tarEpoch = time.Unix(0, 0).UTC()

// PackOutputs writes the tree under dir as a deterministic tar file at
// tarPath and returns its CID. Entries are in lexical order, with zeroed
// times and owners and modes reduced to 0755/0644; only directories and
// regular files are packed, and symlinks are never followed (they are listed
// in Output.Skipped), so a workload cannot make the packer read files
// outside its output directory. The tar may not exceed maxBytes (0: no cap);
// if it would, the partial file is removed and ErrTooLarge returned.
func PackOutputs(dir, tarPath string, maxBytes int64) (out Output, err error) {
	f, err := os.OpenFile(tarPath, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return Output{}, fmt.Errorf("executor.PackOutputs: %w", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("executor.PackOutputs: %w", cerr)
		}
		if err != nil {
			os.Remove(tarPath)
		}
	}()
	h := sha256.New()
	cw := &capWriter{w: io.MultiWriter(f, h), max: maxBytes}
	tw := tar.NewWriter(cw)
	var skipped []string
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		if rel == "." {
			return nil
		}
		name := filepath.ToSlash(rel)
		switch {
		case d.IsDir():
			return tw.WriteHeader(&tar.Header{
				Typeflag: tar.TypeDir, Name: name + "/", Mode: 0o755, ModTime: tarEpoch,
			})
		case d.Type().IsRegular():
			return packFile(tw, p, name)
		default:
			skipped = append(skipped, name)
			return nil
		}
	})
	if err == nil {
		err = tw.Close()
	}
	if err != nil {
		return Output{}, fmt.Errorf("executor.PackOutputs: %w", err)
	}
	return Output{CID: cidFromSum(h.Sum(nil)), Size: cw.n, Path: tarPath, Skipped: skipped}, nil
}

// packFile adds one regular file. It checks after opening that the file is
// still the regular file WalkDir saw, so one swapped for a symlink in
// between is not followed.
func packFile(tw *tar.Writer, p, name string) error {
	before, err := os.Lstat(p)
	if err != nil {
		return err
	}
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() || !os.SameFile(before, fi) {
		return fmt.Errorf("%s changed while packing", name)
	}
	mode := int64(0o644)
	if fi.Mode()&0o111 != 0 {
		mode = 0o755
	}
	hdr := &tar.Header{
		Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: fi.Size(), ModTime: tarEpoch,
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	// Copy exactly the size in the header: a file still growing would
	// otherwise corrupt the tar.
	if _, err := io.CopyN(tw, f, fi.Size()); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// capWriter counts bytes and fails with ErrTooLarge past max (0: no cap).
type capWriter struct {
	w   io.Writer
	n   int64
	max int64
}

func (c *capWriter) Write(p []byte) (int, error) {
	if c.max > 0 && c.n+int64(len(p)) > c.max {
		return 0, fmt.Errorf("%w: output over %d bytes", ErrTooLarge, c.max)
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// VerifyOutput checks that the tar at o.Path has o's size and CID, for a
// renter (or a verifier) that received an output from a provider.
func VerifyOutput(o Output) error {
	want, err := ParseCID(o.CID)
	if err != nil {
		return fmt.Errorf("executor.VerifyOutput: %w", err)
	}
	f, err := os.Open(o.Path)
	if err != nil {
		return fmt.Errorf("executor.VerifyOutput: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return fmt.Errorf("executor.VerifyOutput: %w", err)
	}
	if n != o.Size {
		return fmt.Errorf("executor.VerifyOutput: %w: size %d, want %d", ErrCIDMismatch, n, o.Size)
	}
	if string(h.Sum(nil)) != string(want) {
		return fmt.Errorf("executor.VerifyOutput: %w: %s", ErrCIDMismatch, o.CID)
	}
	return nil
}
