package docker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/idlegrid/idlegrid/node/executor"
)

// Outputs implements executor.Executor. The tar is packed once per
// executor and kept until Remove; a restarted daemon packs again, which
// gives the same CID since packing is deterministic.
func (e *Executor) Outputs(ctx context.Context, h executor.Handle) (executor.Output, error) {
	w, err := e.get(h)
	if err != nil {
		return executor.Output{}, fmt.Errorf("docker.Outputs: %w", err)
	}
	ctx, cancel := e.opCtx(ctx)
	defer cancel()
	done, err := e.finished(ctx, w)
	if err != nil {
		return executor.Output{}, fmt.Errorf("docker.Outputs: %w", e.closedErr(err))
	}
	if !done {
		return executor.Output{}, fmt.Errorf("docker.Outputs: %w: still running", executor.ErrState)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.out == nil {
		tar := filepath.Join(w.dir, tarFile)
		if err := os.Remove(tar); err != nil && !os.IsNotExist(err) {
			return executor.Output{}, fmt.Errorf("docker.Outputs: %w", err)
		}
		// /out has no quota on the host (see the package doc): this cap is
		// where the disk limit holds. The tar may hold the whole limit
		// plus tar headers.
		maxTar := w.diskBytes + w.diskBytes/8 + 1<<20
		out, err := executor.PackOutputs(w.outDir, tar, maxTar)
		if err != nil {
			return executor.Output{}, fmt.Errorf("docker.Outputs: %w", err)
		}
		w.out = &out
	}
	return *w.out, nil
}
