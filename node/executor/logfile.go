package executor

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
)

// truncatedMark ends a log that hit its cap, so a reader can tell a quiet
// workload from a silenced one.
const truncatedMark = "\n[idlegrid: log truncated]\n"

// LogFile is a workload's bounded log on disk: the runtime writes to it and
// any number of readers read it from the start, optionally following it
// until it is closed. Past maxBytes, writes are dropped (and succeed, so a
// chatty workload is not killed by a write error) and a marker is appended.
type LogFile struct {
	f   *os.File
	max int64

	mu        sync.Mutex
	size      int64
	truncated bool
	closed    bool
	changed   chan struct{} // closed and replaced on every write and on Close
}

// NewLogFile creates (truncating) a log at path capped at maxBytes.
func NewLogFile(path string, maxBytes int64) (*LogFile, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("executor.NewLogFile: %w", err)
	}
	return &LogFile{f: f, max: maxBytes, changed: make(chan struct{})}, nil
}

// Write implements io.Writer.
func (l *LogFile) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || l.truncated {
		return len(p), nil
	}
	b := p
	if room := l.max - l.size; int64(len(b)) > room {
		b = append(b[:room:room], truncatedMark...)
		l.truncated = true
	}
	n, err := l.f.WriteAt(b, l.size)
	l.size += int64(n)
	l.notify()
	if err != nil {
		return 0, fmt.Errorf("log write: %w", err)
	}
	return len(p), nil
}

func (l *LogFile) notify() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// CloseWrite marks the end of the log: followers get io.EOF once they have
// read everything. Readers opened before or after keep working.
func (l *LogFile) CloseWrite() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.closed = true
		l.notify()
	}
}

// Close ends the log and releases the file. Open readers fail afterwards.
func (l *LogFile) Close() error {
	l.CloseWrite()
	return l.f.Close()
}

// Size is the number of bytes written so far.
func (l *LogFile) Size() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.size
}

// Reader reads the log from the start. With follow it blocks for more until
// CloseWrite or ctx is done (then it returns ctx's error); without, it ends
// at the size the log had when Reader was called.
func (l *LogFile) Reader(ctx context.Context, follow bool) io.ReadCloser {
	ctx, cancel := context.WithCancel(ctx)
	r := &logReader{l: l, ctx: ctx, cancel: cancel, follow: follow, end: -1}
	if !follow {
		r.end = l.Size()
	}
	return r
}

type logReader struct {
	l      *LogFile
	ctx    context.Context
	cancel context.CancelFunc
	follow bool
	off    int64
	end    int64 // -1 when following
}

func (r *logReader) Read(p []byte) (int, error) {
	for {
		r.l.mu.Lock()
		size, closed, changed := r.l.size, r.l.closed, r.l.changed
		r.l.mu.Unlock()
		limit := size
		if r.end >= 0 {
			limit = r.end
		}
		if r.off < limit {
			if int64(len(p)) > limit-r.off {
				p = p[:limit-r.off]
			}
			n, err := r.l.f.ReadAt(p, r.off)
			r.off += int64(n)
			if err == io.EOF && n > 0 {
				err = nil
			}
			return n, err
		}
		if r.end >= 0 || closed {
			return 0, io.EOF
		}
		select {
		case <-changed:
		case <-r.ctx.Done():
			return 0, r.ctx.Err()
		}
	}
}

// Close unblocks a pending Read.
func (r *logReader) Close() error {
	r.cancel()
	return nil
}
