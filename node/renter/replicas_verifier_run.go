package renter

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/idlegrid/idlegrid/node/executor"
	"github.com/idlegrid/idlegrid/node/executor/docker"
	"github.com/idlegrid/idlegrid/node/executor/wasm"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// A verifier runs on the renter's own CPU, so it is bounded well below a
// job: its time, memory, module size, what it may write and print. It has
// no network (WASI has none) and sees only the two outputs, read-only.
const (
	verifierMaxDuration = time.Minute
	verifierMemoryMiB   = 256
	verifierDiskMiB     = 16
	verifierModuleBytes = 32 << 20
	verifierLogBytes    = 64 << 10
	verifierTailBytes   = 400
	// verifierMaxFiles bounds the files one output unpacks to.
	verifierMaxFiles = 100_000
	// verifierRuns is how many verifiers run at once, whatever the
	// number of jobs settling.
	verifierRuns = 2
)

// verifierEntropy fixes the clocks and randomness a verifier reads, so
// that its verdict on two outputs is the same on every run.
var verifierEntropy = wasm.Entropy{Walltime: time.Date(2001, 2, 3, 4, 5, 6, 7, time.UTC), Seed: 1}

// outputJudge runs a job's verifier on two replicas' outputs: each
// unpacked from its verified tar into its own directory, mounted
// read-only at /a (the reference) and /b, in a fresh WASM executor (a
// module) or container (an image) with no network.
type outputJudge struct {
	log *slog.Logger
	// dir holds each judgement's work directory, removed afterwards.
	dir string
	// modules is where the verifier module is read (the renter's
	// artifacts, from which it also serves wasm jobs' modules).
	modules executor.Artifacts
	// dockerHost is the engine verifier images run on ("" : the default).
	dockerHost string
	// result returns a lease's verified output tar, downloading it if
	// needed (fetcher.result).
	result func(ctx context.Context, jobID, leaseID string) (string, error)
	// slots holds one token per verifier running (verifierRuns).
	slots chan struct{}
}

func newOutputJudge(log *slog.Logger, dir string, modules executor.Artifacts, dockerHost string, result func(ctx context.Context, jobID, leaseID string) (string, error)) *outputJudge {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &outputJudge{log: log, dir: dir, modules: modules, dockerHost: dockerHost, result: result, slots: make(chan struct{}, verifierRuns)}
}

// judge runs verifier (a module CID or an image REF@sha256:…) on a's and
// b's outputs and returns its verdict; an error means no verdict (the
// module is not held here, no engine runs the image, an output could not
// be read).
func (j *outputJudge) judge(ctx context.Context, jobID, verifier string, a, b *store.Lease) (outputVerdict, error) {
	select {
	case j.slots <- struct{}{}:
		defer func() { <-j.slots }()
	case <-ctx.Done():
		return outputVerdict{}, ctx.Err()
	}
	if err := os.MkdirAll(j.dir, 0o700); err != nil {
		return outputVerdict{}, err
	}
	work, err := os.MkdirTemp(j.dir, "judge-")
	if err != nil {
		return outputVerdict{}, err
	}
	defer os.RemoveAll(work)
	mounts := map[string]string{}
	for name, l := range map[string]*store.Lease{"a": a, "b": b} {
		tarPath, err := j.result(ctx, jobID, l.ID)
		if err != nil {
			return outputVerdict{}, fmt.Errorf("the output of lease %s: %w", lease.Short(l.ID), err)
		}
		dir := filepath.Join(work, name)
		if err := unpackOutput(tarPath, dir, l.OutputSize); err != nil {
			return outputVerdict{}, fmt.Errorf("unpack the output of lease %s: %w", lease.Short(l.ID), err)
		}
		mounts["/"+name] = dir
	}
	ex, spec, err := j.runtime(filepath.Join(work, "run"), verifier, mounts)
	if err != nil {
		return outputVerdict{}, err
	}
	defer ex.Close()
	spec.JobID, spec.LeaseID = jobID, "verifier"
	h, err := ex.Prepare(ctx, spec)
	if err != nil {
		if errors.Is(err, executor.ErrNotFound) && spec.ModuleCID != "" {
			return outputVerdict{}, fmt.Errorf("this renter does not hold the module: add it with `idlegrid artifact add FILE`")
		}
		return outputVerdict{}, err
	}
	defer func() { _ = ex.Remove(context.WithoutCancel(ctx), h) }()
	if err := ex.Start(ctx, h); err != nil {
		return outputVerdict{}, err
	}
	res, err := ex.Wait(ctx, h)
	if err != nil {
		return outputVerdict{}, err
	}
	v := outputVerdict{Equivalent: res.OK(), ExitCode: res.ExitCode, Ended: res.Message, Tail: j.tail(ctx, ex, h)}
	if v.Ended == "" {
		v.Ended = res.Reason
	}
	return v, nil
}

// closingExecutor is an executor the judge opens for one verdict.
type closingExecutor interface {
	executor.Executor
	Close() error
}

// runtime opens the executor a verifier runs on, under dir, with the
// outputs mounted read-only, and the spec it runs: a module on wazero
// (fixed clocks and randomness, so its verdict is the same on every run),
// an image on the renter's Docker engine (pulled by digest if missing).
// Either gets no network, verifierMemoryMiB, verifierDiskMiB and
// verifierMaxDuration.
func (j *outputJudge) runtime(dir, verifier string, mounts map[string]string) (closingExecutor, executor.Spec, error) {
	limits := executor.Limits{Network: executor.NetworkNone}
	if !strings.Contains(verifier, "@") {
		ex, err := wasm.New(wasm.Config{
			Dir: dir, Artifacts: j.modules, MaxModuleBytes: verifierModuleBytes,
			MaxMemoryMiB: verifierMemoryMiB, DefaultMemoryMiB: verifierMemoryMiB, DefaultDiskMiB: verifierDiskMiB,
			DefaultMaxDuration: verifierMaxDuration, MaxLogBytes: verifierLogBytes,
			Entropy: &verifierEntropy, ReadOnlyMounts: mounts,
		}, j.log)
		return ex, executor.Spec{Runtime: wasm.Runtime, ModuleCID: verifier, Limits: limits}, err
	}
	ex, err := docker.New(docker.Config{
		Host: j.dockerHost, Dir: dir, Instance: "verifier", MaxLogBytes: verifierLogBytes,
		DefaultMemoryMiB: verifierMemoryMiB, MaxMemoryMiB: verifierMemoryMiB, DefaultDiskMiB: verifierDiskMiB,
		DefaultMaxDuration: verifierMaxDuration, Pull: true, ReadOnlyMounts: mounts,
	}, j.log)
	if err != nil {
		return nil, executor.Spec{}, fmt.Errorf("run the verifier image: %w", err)
	}
	limits.CPUCores = 1
	return ex, executor.Spec{Runtime: docker.Runtime, Image: verifier, Limits: limits}, nil
}

// tail reads the end of the verifier's output, printable.
func (j *outputJudge) tail(ctx context.Context, ex executor.Executor, h executor.Handle) string {
	rc, err := ex.Logs(ctx, h, false)
	if err != nil {
		return ""
	}
	defer rc.Close()
	data, _ := io.ReadAll(io.LimitReader(rc, verifierLogBytes+1))
	if len(data) > verifierTailBytes {
		data = data[len(data)-verifierTailBytes:]
	}
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return ' '
		}
		if r < ' ' || r > '~' {
			return -1
		}
		return r
	}, string(data))
}

// unpackOutput unpacks an output tar into dir: regular files and
// directories only, every name inside dir, at most maxBytes in all.
func unpackOutput(tarPath, dir string, maxBytes int64) error {
	f, err := os.Open(tarPath)
	if err != nil {
		return err
	}
	defer f.Close()
	// Readable by all: a verifier image runs as nobody. Only the
	// container sees them, through the mount; the judgement's work
	// directory above is the renter's alone (0700).
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tr := tar.NewReader(f)
	var total int64
	for files := 0; ; files++ {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if files >= verifierMaxFiles {
			return fmt.Errorf("more than %d entries", verifierMaxFiles)
		}
		name := path.Clean(strings.TrimPrefix(hdr.Name, "./"))
		if name == "." {
			continue
		}
		if !filepath.IsLocal(name) {
			return fmt.Errorf("entry %q is outside the output", hdr.Name)
		}
		dst := filepath.Join(dir, filepath.FromSlash(name))
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(dst, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if total += hdr.Size; total > maxBytes {
				return fmt.Errorf("more than the %d bytes the lease recorded", maxBytes)
			}
			if err := writeEntry(dst, tr); err != nil {
				return err
			}
		}
		// Links and devices are skipped: a verifier judges contents.
	}
}

func writeEntry(dst string, r io.Reader) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, r); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
