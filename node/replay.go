package node

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/executor"
	"github.com/idlegrid/idlegrid/node/executor/wasm"
	"github.com/idlegrid/idlegrid/node/trust"
)

// ReplayExecutor builds the executor a wrong-result proof's job is re-run
// on: a fresh one per run, under dir, that finds only the proof's module
// in modules and gives the guest the clocks and randomness of entropy.
type ReplayExecutor func(dir string, modules executor.Artifacts, entropy wasm.Entropy) (executor.Executor, error)

// wasmReplayExecutor is the default ReplayExecutor: the embedded WASM
// runtime, with a small log (nobody reads it).
func wasmReplayExecutor(dir string, modules executor.Artifacts, entropy wasm.Entropy) (executor.Executor, error) {
	return wasm.New(wasm.Config{
		Dir: dir, Artifacts: modules, MaxModuleBytes: attest.MaxProofModuleSize,
		MaxMemoryMiB: attest.MaxReplayMemoryMiB, DefaultMemoryMiB: attest.MaxReplayMemoryMiB, MaxLogBytes: 64 << 10,
		Entropy: &entropy,
	}, nil)
}

// replayEntropies are the two settings every job is re-run under: a job
// whose output differs between them reads the clock or randomness, and
// no re-run can say which provider's output is right.
var replayEntropies = [attest.ReplayRuns]wasm.Entropy{
	{Walltime: time.Date(2001, 2, 3, 4, 5, 6, 7, time.UTC), Seed: 1},
	{Walltime: time.Date(2037, 6, 5, 4, 3, 2, 1, time.UTC), Seed: 2},
}

// oneModule is an artifact store holding one module.
type oneModule struct {
	cid  string
	data []byte
}

func (m oneModule) Get(_ context.Context, id string) (io.ReadCloser, error) {
	if id != m.cid {
		return nil, fmt.Errorf("%w: %s", executor.ErrNotFound, id)
	}
	return io.NopCloser(bytes.NewReader(m.data)), nil
}

// replayer returns trust's Replay: it checks the proof's spec and module
// against the CIDs its claims name and re-runs the job twice, under each
// of replayEntropies, on fresh executors from newExec, within the proof's
// bounds. Two different outputs settle nothing (the job is not
// deterministic in fact); the same output is the job's.
func replayer(workDir string, newExec ReplayExecutor) trust.Replay {
	if newExec == nil {
		newExec = wasmReplayExecutor
	}
	return func(ctx context.Context, p *attest.WrongResultProof, job string) (int, string, error) {
		spec, err := auction.ParseJobSpec(p.Spec)
		if err != nil {
			return 0, "", fmt.Errorf("%w: the proof's job spec: %w", attest.ErrFalseProof, err)
		}
		c, err := spec.CID()
		if err != nil || c.String() != job {
			return 0, "", fmt.Errorf("%w: the proof's job spec is not job %s", attest.ErrFalseProof, job)
		}
		w, err := spec.Workload()
		if err != nil {
			return 0, "", fmt.Errorf("%w: the proof's job spec: %w", attest.ErrFalseProof, err)
		}
		if !auction.Deterministic(w) {
			return 0, "", fmt.Errorf("%w: job %s is not deterministic (runtime %s)", attest.ErrFalseProof, job, w.Runtime)
		}
		if executor.CIDOf(p.Module) != w.Module {
			return 0, "", fmt.Errorf("%w: the proof's module is not the job's module %s", attest.ErrFalseProof, w.Module)
		}
		// A witness that records what it ran must have run the job as
		// asked: its output is the one the re-run is judged against.
		if len(p.Claims) == 2 {
			if wit, err := attest.OpenEntry(p.Claims[1]); err == nil && wit.Job != nil {
				if err := w.RunWanted().CheckRun(wit.Job); err != nil {
					return 0, "", fmt.Errorf("%w: the witness's claim: %w", attest.ErrFalseProof, err)
				}
			}
		}
		run := executor.Spec{
			JobID: job, LeaseID: "replay", Runtime: w.Runtime, ModuleCID: w.Module, Args: w.Command, Env: w.Env,
			Limits: executor.Limits{
				MemoryMiB: p.Bounds.MemoryMiB, DiskMiB: p.Bounds.OutputMiB,
				MaxDuration: time.Duration(p.Bounds.TimeMs) * time.Millisecond, Network: executor.NetworkNone,
			},
		}
		var codes [attest.ReplayRuns]int
		var outs [attest.ReplayRuns]string
		for i, entropy := range replayEntropies {
			if codes[i], outs[i], err = replayOnce(ctx, workDir, newExec, oneModule{cid: w.Module, data: p.Module}, entropy, run); err != nil {
				return 0, "", err
			}
		}
		for i := 1; i < len(outs); i++ {
			if codes[i] != codes[0] || outs[i] != outs[0] {
				return 0, "", fmt.Errorf("the job's output depends on the clock or randomness (re-runs gave %s and %s)", outs[0], outs[i])
			}
		}
		return codes[0], outs[0], nil
	}
}

// replayOnce runs spec once on a fresh executor in a directory under
// workDir, removed afterwards.
func replayOnce(ctx context.Context, workDir string, newExec ReplayExecutor, modules executor.Artifacts, entropy wasm.Entropy, spec executor.Spec) (int, string, error) {
	if err := os.MkdirAll(filepath.Join(workDir, "replay"), 0o700); err != nil {
		return 0, "", err
	}
	dir, err := os.MkdirTemp(filepath.Join(workDir, "replay"), "run-")
	if err != nil {
		return 0, "", err
	}
	defer os.RemoveAll(dir)
	ex, err := newExec(dir, modules, entropy)
	if err != nil {
		return 0, "", fmt.Errorf("replay executor: %w", err)
	}
	if cl, ok := ex.(io.Closer); ok {
		defer cl.Close()
	}
	return runReplay(ctx, ex, spec)
}

// runReplay runs one workload to its end and returns its exit code and
// output CID.
func runReplay(ctx context.Context, ex executor.Executor, spec executor.Spec) (int, string, error) {
	h, err := ex.Prepare(ctx, spec)
	if err != nil {
		return 0, "", fmt.Errorf("replay: %w", err)
	}
	defer func() { _ = ex.Remove(context.WithoutCancel(ctx), h) }()
	if err := ex.Start(ctx, h); err != nil {
		return 0, "", fmt.Errorf("replay: %w", err)
	}
	res, err := ex.Wait(ctx, h)
	if err != nil {
		_ = ex.Stop(context.WithoutCancel(ctx), h, 0)
		return 0, "", fmt.Errorf("replay: %w", err)
	}
	if res.ExitCode != 0 {
		return res.ExitCode, "", nil
	}
	out, err := ex.Outputs(ctx, h)
	if err != nil {
		return 0, "", fmt.Errorf("replay: %w", err)
	}
	return 0, out.CID, nil
}
