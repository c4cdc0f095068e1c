package executor

import (
	"bufio"
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

func TestLogFile(t *testing.T) {
	l, err := NewLogFile(filepath.Join(t.TempDir(), "log"), 1<<10)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	follow := l.Reader(t.Context(), true)
	defer follow.Close()
	br := bufio.NewReader(follow)

	io.WriteString(l, "one\n")
	if line, err := br.ReadString('\n'); err != nil || line != "one\n" {
		t.Fatalf("follow = %q, %v", line, err)
	}
	snapshot := l.Reader(t.Context(), false)
	io.WriteString(l, "two\n")
	if b, _ := io.ReadAll(snapshot); string(b) != "one\n" {
		t.Errorf("snapshot = %q, want only what was written before", b)
	}
	l.CloseWrite()
	if rest, err := io.ReadAll(br); err != nil || string(rest) != "two\n" {
		t.Errorf("follow rest = %q, %v", rest, err)
	}
	io.WriteString(l, "after close\n")
	if b, _ := io.ReadAll(l.Reader(t.Context(), true)); string(b) != "one\ntwo\n" {
		t.Errorf("full log = %q", b)
	}
}

func TestLogFileCap(t *testing.T) {
	l, err := NewLogFile(filepath.Join(t.TempDir(), "log"), 10)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for range 5 {
		if n, err := io.WriteString(l, "0123456"); n != 7 || err != nil {
			t.Fatalf("Write = %d, %v; a capped log still accepts writes", n, err)
		}
	}
	b, _ := io.ReadAll(l.Reader(t.Context(), false))
	if !strings.HasPrefix(string(b), "0123456012") || !strings.HasSuffix(string(b), truncatedMark) {
		t.Errorf("log = %q", b)
	}
}

func TestLogFileFollowCancel(t *testing.T) {
	l, err := NewLogFile(filepath.Join(t.TempDir(), "log"), 1<<10)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx, cancel := context.WithCancel(t.Context())
	r := l.Reader(ctx, true)
	done := make(chan error, 1)
	go func() {
		_, err := r.Read(make([]byte, 8))
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Read after cancel = %v", err)
	}
	// Close unblocks a reader too.
	r2 := l.Reader(t.Context(), true)
	go func() {
		_, err := r2.Read(make([]byte, 8))
		done <- err
	}()
	r2.Close()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Read after Close = %v", err)
	}
}
