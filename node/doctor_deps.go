package node

import (
	"os"
	"path/filepath"

	"github.com/idlegrid/idlegrid/node/doctor"
	"github.com/idlegrid/idlegrid/node/gpu"
)

// doctorMaxTempC is the GPU temperature the doctor calls hot: datacenter
// boards start throttling around 85 °C.
const doctorMaxTempC = 85

// DoctorDeps wires the doctor's host checks to a node's config and home;
// the caller adds Status and Capacity (the running daemon's API).
func DoctorDeps(cfg Config, home string) doctor.Deps {
	minFree := uint64(max(cfg.Store.LowSpaceMiB, 0)) << 20
	gc := cfg.GPU
	if gc.Backend == "" || gc.Backend == gpu.BackendAuto {
		gc.Backend = gpu.BackendNVML // auto hides why NVML failed; the doctor wants the reason
	}
	d := doctor.Deps{
		Provider:   cfg.Role == RoleProvider,
		GPUBackend: cfg.GPU.Backend,
		OpenGPU:    func() (gpu.Backend, error) { return gpu.Open(gc, nil) },
		Runtimes:   cfg.Provider.Runtimes,
		Docker:     doctor.DockerProbe(cfg.Executor.DockerHost),
		Dirs: []doctor.Dir{
			{Name: "store", Path: StorePath(home), MinFree: minFree},
			{Name: "results", Path: home, MinFree: minFree},
		},
		FreeBytes: doctor.FreeBytes,
		KeyFile:   IdentityPath(home),
		ClockSync: doctor.ClockSync,
		MaxSkew:   cfg.Attest.MaxSkew,
		MaxTempC:  doctorMaxTempC,
	}
	if _, err := os.Stat(StorePath(home)); err != nil {
		d.Dirs[0].Path = home // not created until the daemon first runs
	}
	if _, err := os.Stat(ConfigPath(home)); err != nil {
		// Before idlegrid init: the host's checks, on the disk the home
		// will be on.
		d.KeyFile = ""
		dir := home
		for {
			if _, err := os.Stat(dir); err == nil || filepath.Dir(dir) == dir {
				break
			}
			dir = filepath.Dir(dir)
		}
		for i := range d.Dirs {
			d.Dirs[i].Path = dir
		}
	}
	return d
}
