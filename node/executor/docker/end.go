package docker

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// endMark is why the executor ended a container (ReasonStopped or
// ReasonTimeout) and when it decided to. The engine only knows that the
// process died of a signal; the mark, a file in the work directory, tells
// a Stop from a timeout, also to a daemon started after the fact.
type endMark struct {
	reason string
	at     time.Time
}

// markEnd records reason in dir unless a reason is already there (then it
// fails with an error satisfying os.IsExist): the first decision wins. The
// file is written aside and linked into place, so a reader never sees a
// partial mark and two writers cannot both win.
func markEnd(dir, reason string) error {
	tmp, err := os.CreateTemp(dir, ".reason-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = fmt.Fprintf(tmp, "%s %d\n", reason, time.Now().UnixNano())
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Link(tmp.Name(), filepath.Join(dir, reasonFile))
}

// readEnd returns the mark in dir, if any.
func readEnd(dir string) (endMark, bool) {
	b, err := os.ReadFile(filepath.Join(dir, reasonFile))
	if err != nil {
		return endMark{}, false
	}
	reason, ns, ok := strings.Cut(strings.TrimSpace(string(b)), " ")
	n, err := strconv.ParseInt(ns, 10, 64)
	if !ok || err != nil || reason == "" {
		return endMark{}, false
	}
	return endMark{reason: reason, at: time.Unix(0, n)}, true
}
