package docker

import (
	"context"
	"fmt"

	"github.com/idlegrid/idlegrid/node/executor"
)

// Outputs implements executor.Executor. The tar is packed once per
// executor and kept until Remove; a restarted daemon packs again, which
// gives the same CID since packing is deterministic.
func (e *Executor) Outputs(ctx context.Context, h executor.Handle) (executor.Output, error) {
	w, err := e.workloads.Get(h)
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
	// /out has no quota on the host (see the package doc): the tar's cap
	// is where the disk limit holds.
	out, err := w.outputs.Pack(w.dir, w.diskBytes)
	if err != nil {
		return executor.Output{}, fmt.Errorf("docker.Outputs: %w", err)
	}
	return out, nil
}
