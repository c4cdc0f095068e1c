package docker

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/go-connections/nat"

	"github.com/idlegrid/idlegrid/node/executor"
)

// Labels every container carries. managed and instance scope Reconcile;
// the rest is what a restarted daemon needs to serve the container again.
const (
	labelManaged     = "io.idlegrid.managed"
	labelInstance    = "io.idlegrid.instance"
	labelJob         = "io.idlegrid.job"
	labelLease       = "io.idlegrid.lease"
	labelMaxDuration = "io.idlegrid.max-duration-ms"
	labelDiskBytes   = "io.idlegrid.disk-bytes"
)

// Paths inside the container.
const (
	outPath = "/out"
	tmpPath = "/tmp"
)

// nobody is the user a workload runs as when its image names none (or
// root) and root is not allowed.
const nobody = "65534:65534"

// plan is a workload's resolved settings: the spec with the executor's
// defaults applied and its image resolved.
type plan struct {
	spec        executor.Spec
	image       localImage
	outDir      string // host directory mounted at /out
	memBytes    int64
	diskBytes   int64
	pids        int64
	maxDuration time.Duration
	// Executor settings.
	instance    string
	allowRoot   bool
	init        bool
	maxLogBytes int64
	// readOnly are more host directories mounted read-only, by
	// container path (Config.ReadOnlyMounts).
	readOnly map[string]string
	// serviceNet is the internal network a service joins (service.go).
	serviceNet string
}

// containerConfig builds the engine's container settings for p. It is
// pure, so the hardening can be checked without an engine; the package doc
// says why each setting is there.
func containerConfig(p plan) (*container.Config, *container.HostConfig) {
	spec := p.spec
	cfg := &container.Config{
		Image:      p.image.id,
		Cmd:        spec.Args,
		Entrypoint: spec.Command,
		Env:        envList(spec.Env),
		Labels: map[string]string{
			labelManaged:     "true",
			labelInstance:    p.instance,
			labelJob:         spec.JobID,
			labelLease:       spec.LeaseID,
			labelMaxDuration: strconv.FormatInt(p.maxDuration.Milliseconds(), 10),
			labelDiskBytes:   strconv.FormatInt(p.diskBytes, 10),
		},
	}
	if len(spec.Command) == 0 {
		cfg.Entrypoint = nil // keep the image's
	}
	if len(spec.Stdin) > 0 {
		// Stdin is written once through an attach before start; StdinOnce
		// closes the container's stdin when that attach ends, so the
		// workload reads EOF after the spec's bytes.
		cfg.AttachStdin = true
		cfg.OpenStdin = true
		cfg.StdinOnce = true
	}
	if !p.allowRoot && isRoot(p.image.user) {
		cfg.User = nobody
	}

	pids := p.pids
	hc := &container.HostConfig{
		Privileged:     false,
		CapDrop:        []string{"ALL"},
		SecurityOpt:    []string{"no-new-privileges"},
		ReadonlyRootfs: true,
		IpcMode:        container.IPCModePrivate,
		NetworkMode:    networkMode(spec.Limits.Network),
		Tmpfs: map[string]string{
			tmpPath: "rw,nosuid,nodev,size=" + strconv.FormatInt(p.diskBytes, 10),
		},
		Mounts: []mount.Mount{{
			Type:   mount.TypeBind,
			Source: p.outDir,
			Target: outPath,
		}},
		LogConfig: container.LogConfig{
			Type: "json-file",
			Config: map[string]string{
				"max-size": strconv.FormatInt(p.maxLogBytes, 10),
				"max-file": "2",
			},
		},
		RestartPolicy: container.RestartPolicy{Name: container.RestartPolicyDisabled},
		Resources: container.Resources{
			Memory:     p.memBytes,
			MemorySwap: p.memBytes, // equal to Memory: no swap
			NanoCPUs:   int64(spec.Limits.CPUCores * 1e9),
			PidsLimit:  &pids,
		},
	}
	for _, target := range slices.Sorted(maps.Keys(p.readOnly)) {
		hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeBind, Source: p.readOnly[target], Target: target, ReadOnly: true})
	}
	if p.init {
		hc.Init = &p.init
	}
	if len(spec.Ports) > 0 {
		// An internal network: no route out, but the host reaches the
		// container's address, so the daemon alone can dial its ports.
		hc.NetworkMode = container.NetworkMode(p.serviceNet)
		// Recorded, not published: Endpoint checks a port against them.
		cfg.ExposedPorts = nat.PortSet{}
		for _, port := range spec.Ports {
			cfg.ExposedPorts[nat.Port(strconv.Itoa(int(port))+"/tcp")] = struct{}{}
		}
	}
	if len(spec.Limits.GPUs) > 0 {
		hc.DeviceRequests = []container.DeviceRequest{{
			Driver:       "nvidia",
			DeviceIDs:    slices.Clone(spec.Limits.GPUs),
			Capabilities: [][]string{{"gpu"}},
		}}
	}
	return cfg, hc
}

// networkMode maps a spec's network policy to a network mode. "none" leaves
// the container a loopback interface and no route out; egress uses the
// default bridge, outbound only as nothing is published.
func networkMode(policy string) container.NetworkMode {
	if policy == executor.NetworkEgress {
		return "bridge"
	}
	return "none"
}

// isRoot reports whether an image's USER runs as root (unset is root).
func isRoot(user string) bool {
	name, _, _ := strings.Cut(user, ":")
	return name == "" || name == "root" || name == "0"
}

// envList renders env sorted, since the order is visible to the workload
// and should not vary between runs.
func envList(env map[string]string) []string {
	list := make([]string, 0, len(env))
	for k, v := range env {
		list = append(list, k+"="+v)
	}
	slices.Sort(list)
	return list
}
