package wasm

import (
	"io/fs"
	"sync"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
)

// outFS is the guest's only view of the host: the workload's output
// directory, mounted at /out. wazero already rejects paths that escape the
// mount lexically ("../.."); outFS also refuses symlinks and hard links,
// which the host would otherwise follow out of the directory, and charges
// file growth against the workload's disk quota.
type outFS struct {
	experimentalsys.FS
	quota *diskQuota
}

func newOutFS(dir string, limitBytes int64) *outFS {
	return &outFS{FS: sysfs.DirFS(dir), quota: &diskQuota{limit: limitBytes}}
}

// Symlink implements experimentalsys.FS: a guest-made symlink could point
// anywhere on the host.
func (o *outFS) Symlink(oldPath, linkName string) experimentalsys.Errno {
	return experimentalsys.EPERM
}

// Link implements experimentalsys.FS.
func (o *outFS) Link(oldPath, newPath string) experimentalsys.Errno {
	return experimentalsys.EPERM
}

// OpenFile implements experimentalsys.FS, wrapping files to meter writes.
func (o *outFS) OpenFile(path string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	var truncated int64
	if flag&experimentalsys.O_TRUNC != 0 {
		if st, errno := o.FS.Lstat(path); errno == 0 && st.Mode.IsRegular() {
			truncated = st.Size
		}
	}
	f, errno := o.FS.OpenFile(path, flag, perm)
	if errno != 0 {
		return nil, errno
	}
	o.quota.add(-truncated)
	return &quotaFile{File: f, q: o.quota}, 0
}

// Unlink implements experimentalsys.FS, giving a removed file's bytes back
// to the quota.
func (o *outFS) Unlink(path string) experimentalsys.Errno {
	st, errno := o.FS.Lstat(path)
	if errno != 0 {
		return errno
	}
	if errno := o.FS.Unlink(path); errno != 0 {
		return errno
	}
	if st.Nlink <= 1 {
		o.quota.add(-st.Size)
	}
	return 0
}

// diskQuota tracks the bytes held by files in the output directory. It
// counts apparent sizes, which is what the output tar will hold. It errs on
// the side of counting too much: a file replaced by a rename keeps its
// bytes charged.
type diskQuota struct {
	mu    sync.Mutex
	used  int64
	limit int64
}

func (q *diskQuota) add(delta int64) {
	q.mu.Lock()
	q.used = max(0, q.used+delta)
	q.mu.Unlock()
}

// reserve admits a file growing from oldSize to newSize.
func (q *diskQuota) reserve(oldSize, newSize int64) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	delta := newSize - oldSize
	if delta > 0 && q.used+delta > q.limit {
		return false
	}
	q.used = max(0, q.used+delta)
	return true
}

// quotaFile refuses writes that would grow the output directory past its
// quota with EIO: wazero's errno set has no ENOSPC, and EIO is what a
// full host disk surfaces as.
type quotaFile struct {
	experimentalsys.File
	q *diskQuota
}

func (f *quotaFile) size() (int64, experimentalsys.Errno) {
	st, errno := f.File.Stat()
	return st.Size, errno
}

// grow reserves room for a write of n bytes at off (-1: current offset, or
// the end in append mode) and returns the file's size before the write.
func (f *quotaFile) grow(off int64, n int) experimentalsys.Errno {
	size, errno := f.size()
	if errno != 0 {
		return errno
	}
	if off < 0 {
		if f.File.IsAppend() {
			off = size
		} else if off, errno = f.File.Seek(0, 1); errno != 0 {
			return errno
		}
	}
	if end := off + int64(n); end > size && !f.q.reserve(size, end) {
		return experimentalsys.EIO
	}
	return 0
}

// Write implements experimentalsys.File.
func (f *quotaFile) Write(buf []byte) (int, experimentalsys.Errno) {
	if errno := f.grow(-1, len(buf)); errno != 0 {
		return 0, errno
	}
	return f.File.Write(buf)
}

// Pwrite implements experimentalsys.File.
func (f *quotaFile) Pwrite(buf []byte, off int64) (int, experimentalsys.Errno) {
	if errno := f.grow(off, len(buf)); errno != 0 {
		return 0, errno
	}
	return f.File.Pwrite(buf, off)
}

// Truncate implements experimentalsys.File.
func (f *quotaFile) Truncate(size int64) experimentalsys.Errno {
	old, errno := f.size()
	if errno != 0 {
		return errno
	}
	if !f.q.reserve(old, size) {
		return experimentalsys.EIO
	}
	return f.File.Truncate(size)
}
