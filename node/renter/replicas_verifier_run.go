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

// outputJudge runs a job's verifier module on two replicas' outputs:
// each unpacked from its verified tar into its own directory, mounted
// read-only at /a (the reference) and /b, on a fresh WASM executor.
type outputJudge struct {
	log *slog.Logger
	// dir holds each judgement's work directory, removed afterwards.
	dir string
	// modules is where the verifier module is read (the renter's
	// artifacts, from which it also serves wasm jobs' modules).
	modules executor.Artifacts
	// result returns a lease's verified output tar, downloading it if
	// needed (fetcher.result).
	result func(ctx context.Context, jobID, leaseID string) (string, error)
	// slots holds one token per verifier running (verifierRuns).
	slots chan struct{}
}

func newOutputJudge(log *slog.Logger, dir string, modules executor.Artifacts, result func(ctx context.Context, jobID, leaseID string) (string, error)) *outputJudge {
	return &outputJudge{log: log, dir: dir, modules: modules, result: result, slots: make(chan struct{}, verifierRuns)}
}

// judge runs module on a's and b's outputs and returns its verdict; an
// error means no verdict (the module is not held here, an output could
// not be read).
func (j *outputJudge) judge(ctx context.Context, jobID, module string, a, b *store.Lease) (outputVerdict, error) {
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
	ex, err := wasm.New(wasm.Config{
		Dir: filepath.Join(work, "run"), Artifacts: j.modules, MaxModuleBytes: verifierModuleBytes,
		MaxMemoryMiB: verifierMemoryMiB, DefaultMemoryMiB: verifierMemoryMiB, DefaultDiskMiB: verifierDiskMiB,
		DefaultMaxDuration: verifierMaxDuration, MaxLogBytes: verifierLogBytes,
		Entropy: &verifierEntropy, ReadOnlyMounts: mounts,
	}, j.log)
	if err != nil {
		return outputVerdict{}, err
	}
	defer ex.Close()
	h, err := ex.Prepare(ctx, executor.Spec{
		JobID: jobID, LeaseID: "verifier", Runtime: wasm.Runtime, ModuleCID: module,
		Limits: executor.Limits{Network: executor.NetworkNone},
	})
	if err != nil {
		if errors.Is(err, executor.ErrNotFound) {
			return outputVerdict{}, fmt.Errorf("this renter does not hold the module: add it with `idlegrid artifact add FILE`")
		}
		return outputVerdict{}, err
	}
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

// tail reads the end of the verifier's output, printable.
func (j *outputJudge) tail(ctx context.Context, ex *wasm.Executor, h executor.Handle) string {
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
	if err := os.MkdirAll(dir, 0o700); err != nil {
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
			if err := os.MkdirAll(dst, 0o700); err != nil {
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
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, r); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
