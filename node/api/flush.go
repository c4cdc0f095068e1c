package api

import (
	"io"
	"net/http"
)

// FlushWriter flushes an HTTP response after each write, so a followed
// stream (a job's log) reaches the client as it is written. The dashboard
// streams logs through it too.
type FlushWriter struct {
	w     io.Writer
	f     http.Flusher
	wrote bool
}

// NewFlushWriter writes to w, flushing when w can.
func NewFlushWriter(w http.ResponseWriter) *FlushWriter {
	fw := &FlushWriter{w: w}
	if f, ok := w.(http.Flusher); ok {
		fw.f = f
	}
	return fw
}

func (fw *FlushWriter) Write(p []byte) (int, error) {
	fw.wrote = true
	n, err := fw.w.Write(p)
	if fw.f != nil {
		fw.f.Flush()
	}
	return n, err
}

// Wrote reports whether anything was written: after that the status and
// headers are sent, and an error can only cut the stream.
func (fw *FlushWriter) Wrote() bool { return fw.wrote }
