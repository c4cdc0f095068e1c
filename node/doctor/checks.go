package doctor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/idlegrid/idlegrid/node/api"
	"github.com/idlegrid/idlegrid/node/gpu"
	"github.com/idlegrid/idlegrid/node/words"
)

// Deps is how the checks see the host.
type Deps struct {
	// Provider is true for a provider node; renters skip the GPU checks.
	Provider bool
	// GPUBackend is the configured backend (gpu.backend) and OpenGPU opens
	// it; the doctor closes what it opens.
	GPUBackend string
	OpenGPU    func() (gpu.Backend, error)
	// Runtimes are the runtimes configured (provider.runtimes); Docker
	// failures block bidding only when docker is the only one.
	Runtimes []string
	// Docker asks the engine; nil skips the Docker checks.
	Docker func(ctx context.Context) (DockerInfo, error)
	// Dirs are the directories that must have room (store, results).
	Dirs []Dir
	// FreeBytes reads a filesystem's free bytes.
	FreeBytes func(dir string) (uint64, error)
	// KeyFile is the identity key's path; empty before idlegrid init.
	KeyFile string
	// Status and Capacity ask the running daemon; an error means it does
	// not answer.
	Status   func(ctx context.Context) (api.Status, error)
	Capacity func(ctx context.Context) (api.Offer, error)
	// ClockSync reports whether the kernel's clock is synchronized and its
	// estimated maximum error.
	ClockSync func() (synced bool, maxErr time.Duration, err error)
	// MaxSkew is attest.max_skew: more error than this and peers reject
	// the provider's telemetry.
	MaxSkew time.Duration
	// MaxTempC is the temperature above which a GPU is reported hot.
	MaxTempC float64
}

// Dir is a directory that needs free space.
type Dir struct {
	Name, Path string
	MinFree    uint64 // bytes; below it the store refuses writes
}

// DockerInfo is what the engine says about itself.
type DockerInfo struct {
	Host          string
	ServerVersion string
	Runtimes      []string // configured OCI runtimes ("runc", "nvidia")
	CDISpecDirs   []string // CDI spec dirs (the toolkit's other route to GPUs)
}

// Checks returns the doctor's checks in the order they are reported.
func Checks(d Deps) []Check {
	return []Check{
		{"nvidia-driver", d.checkDriver},
		{"gpu-health", d.checkGPUHealth},
		{"docker-engine", d.checkDocker},
		{"nvidia-container-runtime", d.checkNvidiaRuntime},
		{"disk", d.checkDisk},
		{"key-permissions", d.checkKey},
		{"daemon-reachability", d.checkReachability},
		{"clock", d.checkClock},
	}
}

const driverFix = "install the NVIDIA driver (Ubuntu: sudo ubuntu-drivers install, or sudo apt install nvidia-driver-550-server), reboot, " +
	"and check that nvidia-smi lists the GPUs; or set gpu.backend = \"none\" for a CPU-only node"

func (d Deps) openGPU() (gpu.Backend, []gpu.Device, error) {
	b, err := d.OpenGPU()
	if err != nil {
		return nil, nil, err
	}
	devs, err := b.Devices()
	return b, devs, err
}

func (d Deps) checkDriver(context.Context) Result {
	if !d.Provider {
		return Result{Level: Skip, Detail: "not a provider"}
	}
	if d.GPUBackend == gpu.BackendSim || d.GPUBackend == gpu.BackendNone {
		return Result{Level: Warn, Detail: fmt.Sprintf("gpu.backend = %q: no real GPUs are offered", d.GPUBackend),
			Fix: "set gpu.backend = \"auto\" on a host with NVIDIA GPUs"}
	}
	b, devs, err := d.openGPU()
	if b != nil {
		defer b.Close()
	}
	switch {
	case errors.Is(err, gpu.ErrNoNVML):
		return Result{Level: Fail, Blocks: true, Detail: "no NVIDIA driver: its NVML library (libnvidia-ml.so.1) is missing or failed to load", Fix: driverFix}
	case err != nil && len(devs) == 0:
		return Result{Level: Fail, Blocks: true, Detail: err.Error(), Fix: driverFix}
	case b == nil || b.Name() != gpu.BackendNVML || len(devs) == 0:
		return Result{Level: Fail, Blocks: true, Detail: "no NVIDIA GPU found: NVML is not loaded or lists no devices", Fix: driverFix}
	}
	r := Result{Level: OK, Detail: fmt.Sprintf("NVML: %d GPU(s), driver %s, CUDA %s, %s", len(devs), devs[0].DriverVersion, devs[0].CUDAVersion, devs[0].Name)}
	if err != nil {
		r.Level, r.Detail, r.Fix = Warn, r.Detail+"; some devices failed: "+err.Error(), "check nvidia-smi -q for the failing GPU"
	}
	return r
}

func (d Deps) checkGPUHealth(ctx context.Context) Result {
	if !d.Provider || d.OpenGPU == nil {
		return Result{Level: Skip, Detail: "not a provider"}
	}
	b, devs, err := d.openGPU()
	if b != nil {
		defer b.Close()
	}
	if err != nil || len(devs) == 0 {
		return Result{Level: Skip, Detail: "no GPU to check (see nvidia-driver)"}
	}
	samples, err := b.Sample(ctx)
	if errors.Is(err, gpu.ErrGPULost) {
		return Result{Level: Fail, Blocks: true, Detail: err.Error(), Fix: "the GPU fell off the bus (XID 79): reseat or replace it, check power and cooling, then reboot"}
	}
	var problems []string
	for _, s := range samples {
		if s.Has(gpu.MetricTemperature) && d.MaxTempC > 0 && s.TemperatureC >= d.MaxTempC {
			problems = append(problems, fmt.Sprintf("GPU %d at %.0f°C", s.Index, s.TemperatureC))
		}
		if s.ECCUncorrected > 0 {
			problems = append(problems, fmt.Sprintf("GPU %d has %d uncorrected ECC errors", s.Index, s.ECCUncorrected))
		}
	}
	if err != nil {
		problems = append(problems, err.Error())
	}
	if len(problems) > 0 {
		return Result{Level: Warn, Detail: strings.Join(problems, "; "),
			Fix: "check airflow and fans; for ECC errors run nvidia-smi -q -d ECC,PAGE_RETIREMENT and reset or replace the GPU"}
	}
	return Result{Level: OK, Detail: fmt.Sprintf("%d GPU(s) sampled, none hot, no uncorrected ECC errors", len(samples))}
}

func (d Deps) dockerBlocks() bool {
	return !slices.ContainsFunc(d.Runtimes, func(r string) bool { return r != "docker" })
}

func (d Deps) checkDocker(ctx context.Context) Result {
	if !d.Provider || d.Docker == nil || !slices.Contains(d.Runtimes, "docker") {
		return Result{Level: Skip, Detail: "the docker runtime is not configured"}
	}
	info, err := d.Docker(ctx)
	if err != nil {
		return Result{Level: Fail, Blocks: d.dockerBlocks(), Detail: err.Error(),
			Fix: "install Docker (sudo apt install docker.io), start it (sudo systemctl enable --now docker), add the idlegrid user to the docker group, or set executor.docker_host"}
	}
	return Result{Level: OK, Detail: fmt.Sprintf("engine %s at %s", info.ServerVersion, info.Host)}
}

func (d Deps) checkNvidiaRuntime(ctx context.Context) Result {
	if !d.Provider || d.Docker == nil || !slices.Contains(d.Runtimes, "docker") {
		return Result{Level: Skip, Detail: "the docker runtime is not configured"}
	}
	info, err := d.Docker(ctx)
	if err != nil {
		return Result{Level: Skip, Detail: "no engine (see docker-engine)"}
	}
	if slices.Contains(info.Runtimes, "nvidia") || len(info.CDISpecDirs) > 0 {
		detail := "runtimes " + words.All(info.Runtimes)
		if len(info.CDISpecDirs) > 0 {
			detail += ", CDI specs in " + words.All(info.CDISpecDirs)
		}
		return Result{Level: OK, Detail: detail}
	}
	return Result{Level: Fail, Blocks: d.dockerBlocks(), Detail: fmt.Sprintf("the engine has no nvidia runtime (only %s): containers cannot see the GPUs", words.All(info.Runtimes)),
		Fix: "install the NVIDIA Container Toolkit (sudo apt install nvidia-container-toolkit), run sudo nvidia-ctk runtime configure --runtime=docker and sudo systemctl restart docker"}
}

func (d Deps) checkDisk(context.Context) Result {
	var low, ok []string
	for _, dir := range d.Dirs {
		free, err := d.FreeBytes(dir.Path)
		if err != nil {
			low = append(low, fmt.Sprintf("%s (%s): %v", dir.Name, dir.Path, err))
			continue
		}
		s := fmt.Sprintf("%s %d MiB free", dir.Name, free>>20)
		if free < dir.MinFree {
			low = append(low, fmt.Sprintf("%s, below %d MiB", s, dir.MinFree>>20))
		} else {
			ok = append(ok, s)
		}
	}
	if len(low) > 0 {
		return Result{Level: Fail, Blocks: d.Provider, Detail: strings.Join(append(low, ok...), "; "),
			Fix: "free space on that filesystem (old results: executor.keep_results), or move the home to a larger disk"}
	}
	return Result{Level: OK, Detail: strings.Join(ok, "; ")}
}

func (d Deps) checkKey(context.Context) Result {
	if d.KeyFile == "" {
		return Result{Level: Skip, Detail: "no node home yet", Fix: "idlegrid init --role provider creates the identity"}
	}
	st, err := os.Stat(d.KeyFile)
	if errors.Is(err, os.ErrNotExist) {
		return Result{Level: Fail, Blocks: true, Detail: "no identity key at " + d.KeyFile, Fix: "run idlegrid init to create the identity"}
	}
	if err != nil {
		return Result{Level: Fail, Blocks: true, Detail: err.Error(), Fix: "run idlegrid init to create the identity"}
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return Result{Level: Fail, Blocks: true, Detail: fmt.Sprintf("%s is mode %04o: others can read the node's private key", d.KeyFile, perm),
			Fix: "chmod 600 " + d.KeyFile}
	}
	return Result{Level: OK, Detail: fmt.Sprintf("%s is mode %04o", d.KeyFile, st.Mode().Perm())}
}

func (d Deps) checkReachability(ctx context.Context) Result {
	if d.Status == nil {
		return Result{Level: Skip, Detail: "no node home yet, so no daemon to ask"}
	}
	st, err := d.Status(ctx)
	if err != nil {
		return Result{Level: Warn, Detail: "the daemon does not answer: " + err.Error(),
			Fix: "start it (sudo systemctl start idlegrid, or idlegrid daemon) and run the doctor again to check ports and reachability"}
	}
	detail := fmt.Sprintf("daemon up %s, %s, listening on %s, %s", words.Duration(time.Duration(st.UptimeSeconds)*time.Second),
		words.Plural(st.ConnectedPeers, "peer"), someAddrs(st.ListenAddrs), observed(st.ObservedAddrs))
	if st.ConnectedPeers == 0 {
		return Result{Level: Fail, Blocks: d.Provider, Detail: detail,
			Fix: "no peers: check p2p.bootstrap and that the firewall allows UDP and TCP 7401 out and in (sudo ufw allow 7401)"}
	}
	if !d.Provider || d.Capacity == nil {
		return Result{Level: OK, Detail: detail}
	}
	offer, err := d.Capacity(ctx)
	if err != nil {
		return Result{Level: Warn, Detail: detail + "; no capacity record published yet: " + err.Error(), Fix: "wait a minute after start, then check idlegrid market search"}
	}
	detail += "; reachability " + offer.Reachability
	if offer.Reachability != "public" {
		return Result{Level: Warn, Detail: detail,
			Fix: "renters reach this host through a relay: forward TCP and UDP 7401 to it (or set p2p.announce to its public address) for faster, cheaper leases"}
	}
	return Result{Level: OK, Detail: detail}
}

func (d Deps) checkClock(context.Context) Result {
	if d.ClockSync == nil {
		return Result{Level: Skip, Detail: "cannot read the kernel clock state here"}
	}
	synced, maxErr, err := d.ClockSync()
	switch {
	case err != nil:
		return Result{Level: Warn, Detail: err.Error(), Fix: "check timedatectl"}
	case !synced:
		// A warning, not a block: the kernel flag says nothing of the actual
		// offset, and some hosts keep time without telling the kernel.
		return Result{Level: Warn, Detail: "the kernel says the clock is not NTP-synchronized: peers reject telemetry more than attest.max_skew off",
			Fix: "enable NTP: sudo timedatectl set-ntp true (systemd-timesyncd or chrony)"}
	case d.MaxSkew > 0 && maxErr > d.MaxSkew/2:
		return Result{Level: Warn, Detail: fmt.Sprintf("clock synchronized, but its error bound %s is over half of attest.max_skew %s", words.Duration(maxErr), words.Duration(d.MaxSkew)),
			Fix: "use a closer NTP server"}
	}
	return Result{Level: OK, Detail: fmt.Sprintf("synchronized, error bound %s", words.Duration(maxErr))}
}

// someAddrs names the first address and counts the others.
func someAddrs(addrs []string) string {
	switch len(addrs) {
	case 0:
		return "no address"
	case 1:
		return addrs[0]
	}
	return fmt.Sprintf("%s and %d more", addrs[0], len(addrs)-1)
}

// observed is how peers see this node.
func observed(addrs []string) string {
	if len(addrs) == 0 {
		return "not yet observed by a peer"
	}
	return "observed as " + someAddrs(addrs)
}
