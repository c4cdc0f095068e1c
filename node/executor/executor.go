package executor

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"
)

// Handle names one prepared workload inside one executor. It is a plain
// string so that it can be persisted with the lease and, for runtimes that
// outlive the daemon (containers), found again after a restart.
type Handle string

// Executor runs workloads. Implementations are safe for concurrent use; each
// handle moves through Prepare, Start, Wait, Outputs and Remove, and Stop may
// be called at any point after Prepare.
type Executor interface {
	// Name is the runtime this executor serves, matched against Spec.Runtime
	// ("wasm", "docker").
	Name() string
	// Prepare validates spec against the executor's limits, fetches and
	// verifies the artifact (module or image) and allocates the workload's
	// resources (work directory, log). Nothing runs yet.
	Prepare(ctx context.Context, spec Spec) (Handle, error)
	// Start launches the workload and returns once it runs. The workload's
	// lifetime is bounded by Spec.Limits.MaxDuration and Stop, not by ctx.
	Start(ctx context.Context, h Handle) error
	// Wait blocks until the workload finishes or ctx is done, in which case
	// it returns ctx's error and the workload keeps running.
	Wait(ctx context.Context, h Handle) (Result, error)
	// Logs returns the workload's combined stdout and stderr from the start.
	// With follow, reads block for more output until the workload finishes
	// or ctx is done; without, the reader ends at what was written so far.
	Logs(ctx context.Context, h Handle, follow bool) (io.ReadCloser, error)
	// Stop asks the workload to end, waits up to grace for it to do so and
	// then kills it. A workload that is stopped before it finishes ends with
	// ReasonStopped. Stopping a finished workload is a no-op.
	Stop(ctx context.Context, h Handle, grace time.Duration) error
	// Outputs packs what the workload wrote to its output directory into a
	// tar file addressed by CID. It fails with ErrState until the workload
	// finished. The file stays valid until Remove.
	Outputs(ctx context.Context, h Handle) (Output, error)
	// Remove stops the workload if needed and frees everything it holds,
	// including the output tar.
	Remove(ctx context.Context, h Handle) error
}

// Network policies.
const (
	// NetworkNone gives the workload no network at all (the default).
	NetworkNone = "none"
	// NetworkEgress allows outbound connections only. It is a permission:
	// a runtime without networking (wasm) still runs the workload, offline.
	NetworkEgress = "egress"
)

// Limits are the resources a lease grants one workload. Zero means the
// executor's default. Units are in the field names.
type Limits struct {
	// GPUs are the UUIDs of the GPUs the lease holds.
	GPUs        []string
	CPUCores    float64
	MemoryMiB   int64
	DiskMiB     int64
	PIDs        int64
	MaxDuration time.Duration
	// Network is NetworkNone (or empty) or NetworkEgress.
	Network string
}

// Spec is what to run.
type Spec struct {
	// JobID and LeaseID label the workload (containers carry them as labels,
	// so that the daemon can find workloads nobody tracks after a restart).
	JobID   string
	LeaseID string
	// Runtime selects the executor ("wasm", "docker").
	Runtime string
	// Image is the container image reference (docker).
	Image string
	// ModuleCID addresses the WASM module in the artifact store (wasm).
	ModuleCID string
	// Command overrides the image's entrypoint (docker); Args follow it. For
	// wasm, Args are argv[1:] (argv[0] is the module CID).
	Command []string
	Args    []string
	Env     map[string]string
	Stdin   []byte
	Limits  Limits
	// Ports makes the workload a service: the container ports it listens
	// on, reachable by the daemon through Endpointer.Endpoint and from
	// nowhere else (docker only).
	Ports []uint16
}

// Validate checks what every executor needs; executors check the rest.
func (s *Spec) Validate() error {
	if s.Runtime == "" {
		return fmt.Errorf("%w: empty runtime", ErrInvalidSpec)
	}
	switch s.Limits.Network {
	case "", NetworkNone, NetworkEgress:
	default:
		return fmt.Errorf("%w: network policy %q", ErrInvalidSpec, s.Limits.Network)
	}
	l := s.Limits
	if l.CPUCores < 0 || l.MemoryMiB < 0 || l.DiskMiB < 0 || l.PIDs < 0 || l.MaxDuration < 0 {
		return fmt.Errorf("%w: negative limit", ErrInvalidSpec)
	}
	for k := range s.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return fmt.Errorf("%w: env name %q", ErrInvalidSpec, k)
		}
	}
	return nil
}

// Reasons a workload finished, in Result.Reason.
const (
	ReasonCompleted = "completed" // exit code 0
	ReasonFailed    = "failed"    // non-zero exit code, or failed to start
	ReasonTrap      = "trap"      // the runtime aborted it (wasm trap)
	ReasonOOM       = "oom"       // it needed more memory than its limit
	ReasonTimeout   = "timeout"   // it ran past Limits.MaxDuration
	ReasonStopped   = "stopped"   // Stop, Remove or executor Close
)

// Result is how a workload finished.
type Result struct {
	// ExitCode is the process exit code, or -1 when the workload did not
	// exit by itself (trap, timeout, stop).
	ExitCode int
	Reason   string
	// Message explains a failure (the trap, the start error); empty on success.
	Message    string
	StartedAt  time.Time
	FinishedAt time.Time
}

// OK reports whether the workload completed successfully.
func (r Result) OK() bool { return r.Reason == ReasonCompleted }

// Output is a workload's output directory packed as a tar file.
type Output struct {
	// CID is the CIDv1 (raw, sha2-256) of the tar file's bytes.
	CID string
	// Size is the tar file's length in bytes.
	Size int64
	// Path is the tar file on the local disk.
	Path string
	// Skipped lists entries left out of the tar (symlinks, devices,
	// sockets), relative to the output directory.
	Skipped []string
}

// ArtifactNamer is implemented by executors that can name the content
// address of what a prepared workload runs: the image ID a container was
// created from ("sha256:<hex>"), a module's CID. The provider signs it
// into the chain's job events (attest.JobEvent.Artifact), so a result is
// bound to the exact bytes that ran, not to a name.
type ArtifactNamer interface {
	Artifact(ctx context.Context, h Handle) (string, error)
}
