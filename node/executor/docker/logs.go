package docker

import (
	"context"
	"fmt"
	"io"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/idlegrid/idlegrid/node/executor"
)

// Logs implements executor.Executor. The log is the engine's, so it is
// there after a restart as well; stdout and stderr come interleaved as the
// engine recorded them. A followed log ends when the container does; the
// engine also ends at once a follow of a container not started yet.
func (e *Executor) Logs(ctx context.Context, h executor.Handle, follow bool) (io.ReadCloser, error) {
	w, err := e.workloads.Get(h)
	if err != nil {
		return nil, fmt.Errorf("docker.Logs: %w", err)
	}
	// Lives as long as the reader: cancelled by its Close, ctx or Close of
	// the executor.
	lctx, cancel := e.opCtx(ctx)
	rc, err := e.cli.ContainerLogs(lctx, w.id, container.LogsOptions{
		ShowStdout: true, ShowStderr: true, Follow: follow,
	})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("docker.Logs: %s: %w", h, e.closedErr(err))
	}
	pr, pw := io.Pipe()
	// A reader that stops reading must not pin the copier: once lctx is
	// done the pipe fails, unblocking it, and reads report why.
	stop := context.AfterFunc(lctx, func() { pw.CloseWithError(lctx.Err()) })
	go func() {
		defer stop()
		defer rc.Close()
		// The stream is multiplexed (no TTY); demux both streams into one.
		_, err := stdcopy.StdCopy(pw, pw, rc)
		if lctx.Err() != nil {
			err = lctx.Err()
		}
		pw.CloseWithError(err) // nil: io.EOF
	}()
	return &logReader{PipeReader: pr, cancel: cancel}, nil
}

type logReader struct {
	*io.PipeReader
	cancel context.CancelFunc
}

// Close ends the stream from the engine and unblocks a pending Read.
func (r *logReader) Close() error {
	r.cancel()
	return r.PipeReader.Close()
}
