// Package docker is the container executor: it runs OCI images on a Docker
// engine through the engine API, for providers that offer GPUs or need more
// than WASM can give.
//
// # Security model
//
// The image and its arguments come from a stranger, so every container is
// created hardened, whatever the image asks for (see containerConfig):
//
//   - not privileged, every capability dropped (CapDrop ALL, so even a
//     root process cannot chown, mknod, mount or change the network), and
//     no-new-privileges, so setuid binaries cannot regain them;
//   - a read-only root filesystem; the only writable places are /out (a bind
//     mount of the workload's output directory on the host), a /tmp tmpfs of
//     the lease's disk size, and the engine's default /dev/shm;
//   - no network at all (network mode "none": only a loopback interface)
//     unless the spec asks for egress, which puts it on the engine's default
//     bridge: outbound connections work, nothing is published inbound;
//   - a non-root user (65534:65534, "nobody") when the image names no user or
//     names root, unless Config.AllowRoot;
//   - its own PID and IPC namespaces, a PID limit, memory without swap, a
//     CPU quota and, when the lease holds GPUs, exactly those GPUs by UUID
//     (through the nvidia device request, i.e. the NVIDIA container toolkit);
//   - the engine's default seccomp and AppArmor profiles, when the engine
//     has them (docker info lists them under Security Options).
//
// What is not enforced: /out has no quota (bind mounts on overlay2 have
// none), so it is only capped when packed: Outputs fails with ErrTooLarge
// past the disk limit. /tmp and /dev/shm live in memory and count against
// the memory limit. With egress, the default bridge also reaches other
// containers on it and the host's bridge address; a dedicated network
// without inter-container traffic is left to the operator.
//
// # Images
//
// Images are named by content, never by tag: Spec.Image is
// REF@sha256:<64 hex>. Prepare accepts a local image whose ID is that
// digest (an image ID is the hash of its config, which names the hashes of
// its layers, so it pins the content; locally built and loaded images only
// have this), or whose RepoDigests hold REF@sha256:<hex> (a pulled image).
// Missing images are pulled by digest when Config.Pull is set, which makes
// the engine verify the manifest against the digest. Containers are created
// from the resolved image ID.
//
// # Limits
//
// Limits.MemoryMiB sets Memory and MemorySwap (equal: no swap; an OOM kill
// gives ReasonOOM), CPUCores sets NanoCPUs (zero: no quota), PIDs sets
// PidsLimit, DiskMiB sizes /tmp and caps the output tar, Network picks the
// network mode and GPUs become a device request. MaxDuration is enforced by
// the executor: a timer per workload stops it (SIGTERM, then SIGKILL after a
// short grace) and the result says ReasonTimeout. The container log is the
// engine's json-file log, rotated at Config.MaxLogBytes with two files, so a
// chatty workload loses its oldest lines rather than filling the disk.
//
// # Stopping
//
// Stop and timeouts go through the engine's stop: the image's STOPSIGNAL
// (SIGTERM by default), the grace, then SIGKILL. When the engine has
// docker-init (New asks it), containers run with Init, so PID 1 is tini: it
// forwards the signal and reaps zombies, and a workload without a SIGTERM
// handler still ends at once instead of at the kill (a PID 1 ignores
// signals it has no handler for). How a container ended is told apart by a
// mark in its work directory: the engine only sees a signal.
//
// # Reattach
//
// Containers outlive the daemon. A handle is the container's name
// ("idlegrid-…"), the work directory is derived from it and everything else
// the executor needs (deadline, disk cap, how a stop ended) is in the
// container's labels or in small files in the work directory, so a restarted
// daemon that kept only the handle reattaches with Reconcile (see
// executor.Reattacher). Close therefore leaves containers running. Every
// container carries io.idlegrid.instance=Config.Instance, and Reconcile only
// ever removes containers of its own instance, so several daemons can share
// one engine.
package docker

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/docker/docker/client"

	"github.com/idlegrid/idlegrid/node/executor"
)

// Runtime is the Spec.Runtime this executor serves.
const Runtime = "docker"

// ErrNoEngine is returned by New when no Docker engine answers at the
// configured address; the node then does not advertise the docker runtime.
var ErrNoEngine = errors.New("docker engine not reachable")

// Config configures an Executor. Zero fields take the defaults noted.
type Config struct {
	// Host is the engine address (default: $DOCKER_HOST, else
	// unix:///var/run/docker.sock).
	Host string
	// Dir holds one work directory per workload (required). It belongs to
	// this executor alone: Reconcile removes work directories nobody tracks.
	Dir string
	// Instance tells this daemon's containers from those of other daemons on
	// the same engine (the provider's peer ID, say). Reconcile only removes
	// containers of its own instance (default "default").
	Instance string
	// MaxLogBytes is the size at which the engine rotates a container's log;
	// it keeps two files (default 4 MiB).
	MaxLogBytes int64
	// DefaultMemoryMiB applies when a spec sets no memory limit (default
	// 1024, at most MaxMemoryMiB).
	DefaultMemoryMiB int64
	// MaxMemoryMiB is the most memory one workload may ask for (default: the
	// engine host's memory).
	MaxMemoryMiB int64
	// DefaultPIDs applies when a spec sets no PID limit (default 512).
	DefaultPIDs int64
	// MaxPIDs is the most PIDs one workload may ask for (default 32768).
	MaxPIDs int64
	// DefaultDiskMiB sizes /tmp and caps the output tar when a spec sets no
	// disk limit (default 1024).
	DefaultDiskMiB int64
	// DefaultMaxDuration applies when a spec sets none (default 1h): nothing
	// runs unbounded.
	DefaultMaxDuration time.Duration
	// TimeoutGrace is how long a workload past its max duration has between
	// SIGTERM and SIGKILL (default 5s).
	TimeoutGrace time.Duration
	// AllowRoot lets images that name no user (or root) run as root. Even
	// then the process holds no capabilities.
	AllowRoot bool
	// Pull lets Prepare pull, by digest, an image missing locally.
	Pull bool
	// ReadOnlyMounts, if set, gives every workload more host directories
	// besides /out, bind-mounted read-only: container path ("/a") to host
	// directory. A renter's output verifier image reads the outputs it
	// judges this way; the directories must be readable by the
	// workload's user (nobody, unless AllowRoot).
	ReadOnlyMounts map[string]string
}

func (c *Config) fill() error {
	if c.Dir == "" {
		return errors.New("empty Dir")
	}
	for target, src := range c.ReadOnlyMounts {
		if !filepath.IsAbs(target) || target == outPath || target == tmpPath || !filepath.IsAbs(src) {
			return fmt.Errorf("read-only mount %q from %q: want an absolute container path other than %s and %s, from an absolute host directory", target, src, outPath, tmpPath)
		}
	}
	if c.Instance == "" {
		c.Instance = "default"
	}
	if c.MaxLogBytes <= 0 {
		c.MaxLogBytes = 4 << 20
	}
	if c.DefaultMemoryMiB <= 0 {
		c.DefaultMemoryMiB = 1024
	}
	if c.DefaultPIDs <= 0 {
		c.DefaultPIDs = 512
	}
	if c.MaxPIDs <= 0 {
		c.MaxPIDs = 32768
	}
	c.DefaultPIDs = min(c.DefaultPIDs, c.MaxPIDs)
	if c.DefaultDiskMiB <= 0 {
		c.DefaultDiskMiB = 1024
	}
	if c.DefaultMaxDuration <= 0 {
		c.DefaultMaxDuration = time.Hour
	}
	if c.TimeoutGrace <= 0 {
		c.TimeoutGrace = 5 * time.Second
	}
	return nil
}

// Executor runs containers on a Docker engine. It implements
// executor.Executor and executor.Reattacher.
type Executor struct {
	cfg Config
	log *slog.Logger
	cli *client.Client
	// init is whether the engine has docker-init (tini): with it, PID 1
	// forwards signals and reaps zombies, so a workload that never installed
	// a SIGTERM handler still ends on Stop's SIGTERM instead of at the kill.
	init bool

	// ctx is cancelled by Close; timers and stdin writers run under it.
	ctx    context.Context
	cancel context.CancelFunc

	// workloads also tracks the stdin writers and timer stops (Go).
	workloads executor.Workloads[*workload]
}

var (
	_ executor.Executor   = (*Executor)(nil)
	_ executor.Reattacher = (*Executor)(nil)
)

// pingTimeout bounds New's check of the engine: an engine that does not
// answer a ping that fast is not one to run leases on.
const pingTimeout = 5 * time.Second

// New connects to the engine and returns an Executor; a nil logger
// discards. It fails with ErrNoEngine, and says where it looked, when the
// engine does not answer.
func New(cfg Config, logger *slog.Logger) (*Executor, error) {
	if err := cfg.fill(); err != nil {
		return nil, fmt.Errorf("docker.New: %w", err)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	opts := []client.Opt{client.WithHostFromEnv(), client.WithAPIVersionNegotiation()}
	if cfg.Host != "" {
		opts = append(opts, client.WithHost(cfg.Host))
	}
	cli, err := client.NewClientWithOpts(opts...)
	if err != nil {
		return nil, fmt.Errorf("docker.New: %w: %s: %v", ErrNoEngine, cfg.Host, err)
	}
	e, err := connect(cfg, logger, cli)
	if err != nil {
		cli.Close()
		return nil, fmt.Errorf("docker.New: %w", err)
	}
	return e, nil
}

func connect(cfg Config, logger *slog.Logger, cli *client.Client) (*Executor, error) {
	ctx, cancel := context.WithTimeout(context.Background(), pingTimeout)
	defer cancel()
	// Ping also negotiates the API version down to the engine's.
	if _, err := cli.Ping(ctx); err != nil {
		return nil, fmt.Errorf("%w at %s: %v: install Docker and start it, or set the engine address (DOCKER_HOST)",
			ErrNoEngine, cli.DaemonHost(), err)
	}
	if v := cli.ClientVersion(); versionLess(v, minAPIVersion) {
		return nil, fmt.Errorf("%w at %s: api %s, need %s (docker 19.03 or later)",
			ErrNoEngine, cli.DaemonHost(), v, minAPIVersion)
	}
	if cfg.MaxMemoryMiB <= 0 {
		info, err := cli.Info(ctx)
		if err != nil {
			return nil, fmt.Errorf("engine info: %w", err)
		}
		cfg.MaxMemoryMiB = info.MemTotal >> 20
	}
	cfg.DefaultMemoryMiB = min(cfg.DefaultMemoryMiB, cfg.MaxMemoryMiB)
	ver, err := cli.ServerVersion(ctx)
	if err != nil {
		return nil, fmt.Errorf("engine version: %w", err)
	}
	hasInit := false
	for _, c := range ver.Components {
		// The engine lists docker-init only when it found the binary;
		// asking for Init without it fails every container start.
		hasInit = hasInit || c.Name == "docker-init"
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, err
	}
	rctx, rcancel := context.WithCancel(context.Background())
	e := &Executor{
		cfg: cfg, log: logger.With("executor", Runtime), cli: cli, init: hasInit,
		ctx: rctx, cancel: rcancel,
	}
	e.log.Info("docker engine connected", "host", cli.DaemonHost(), "engine", ver.Version,
		"api", cli.ClientVersion(), "init", hasInit, "instance", cfg.Instance)
	return e, nil
}

// minAPIVersion is the oldest engine API with device requests (GPUs).
const minAPIVersion = "1.40"

// versionLess compares "major.minor" API versions.
func versionLess(a, b string) bool {
	var am, an, bm, bn int
	fmt.Sscanf(a, "%d.%d", &am, &an)
	fmt.Sscanf(b, "%d.%d", &bm, &bn)
	return am < bm || (am == bm && an < bn)
}

// Name implements executor.Executor.
func (e *Executor) Name() string { return Runtime }

// Close stops the executor's timers and closes the engine client. It
// leaves containers running (they outlive the daemon by design; a later
// executor reattaches them with Reconcile). It is idempotent.
func (e *Executor) Close() error {
	tracked, first := e.workloads.Close()
	if !first {
		return nil
	}
	for _, w := range tracked {
		w.disarm()
	}
	e.cancel()
	e.workloads.Wait()
	if err := e.cli.Close(); err != nil {
		return fmt.Errorf("docker.Close: %w", err)
	}
	return nil
}

// handlePrefix starts every handle, which is also the container's name.
const handlePrefix = "idlegrid-"

func newHandle() executor.Handle {
	return executor.Handle(handlePrefix + strings.ToLower(rand.Text()))
}

// validHandle reports whether h has newHandle's shape, so that it is a safe
// path element and names one of our containers.
func validHandle(h string) bool {
	rest, ok := strings.CutPrefix(h, handlePrefix)
	if !ok || len(rest) != 26 {
		return false
	}
	for _, c := range rest {
		if !(c >= 'a' && c <= 'z' || c >= '2' && c <= '7') {
			return false
		}
	}
	return true
}

// workDir is the work directory of h.
func (e *Executor) workDir(h executor.Handle) string { return filepath.Join(e.cfg.Dir, string(h)) }

// opCtx returns ctx, also cancelled when the executor closes, so that no
// call blocks past Close.
func (e *Executor) opCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(e.ctx, cancel)
	return ctx, func() { stop(); cancel() }
}

// closedErr turns an error seen after Close into ErrClosed.
func (e *Executor) closedErr(err error) error {
	if e.ctx.Err() != nil {
		return executor.ErrClosed
	}
	return err
}
