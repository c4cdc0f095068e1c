package gpu

import (
	"slices"
)

// Profile is the spec sheet of one GPU model, used by the sim backend and
// usable as a known-model table (name, PCI ID, memory) by verifiers.
type Profile struct {
	Key          string // short name used in SimConfig.Profiles
	Name         string // name as NVML reports it
	PCIDeviceID  uint32 // device<<16 | 0x10DE
	MemoryMiB    uint64 // total as NVML reports it (nvidia-smi "FB Memory Usage Total")
	TDPW         float64
	IdlePowerW   float64 // typical idle draw with persistence mode on
	ComputeMajor int
	ComputeMinor int

	MaxSMClockMHz   uint32
	MaxMemClockMHz  uint32
	IdleSMClockMHz  uint32
	IdleMemClockMHz uint32 // HBM parts keep the memory clock fixed

	MaxOperatingC float64 // sw thermal slowdown starts here
	SlowdownC     float64 // hw slowdown
	ShutdownC     float64
	// FullLoadC is the steady temperature at TDP with nominal cooling. It is
	// a model parameter (typical observed values), not a datasheet number.
	FullLoadC float64

	ECC    bool // ECC counters are reported
	MIG    bool // MIG capable
	Serial bool // board reports a serial number
	VBIOS  string
}

// Sources for the numbers below:
//   - memory, TDP, compute capability: NVIDIA product datasheets (H100 SXM5,
//     A100 80GB SXM4, L40S, GeForce RTX 4090, A10, T4) and the CUDA
//     programming guide's compute-capability table;
//   - NVML names, MiB totals, max/idle clocks and thermal thresholds:
//     `nvidia-smi -q` output quoted in public issues, e.g. H100 SXM max clocks
//     SM 1980 / memory 2619 MHz with 345 MHz idle SM (NVIDIA/DCGM#120),
//     A100 SXM4 max SM 1410 MHz (NVIDIA/nvidia-docker#1648), RTX 4090
//     24563 MiB and 10501 MHz memory (NVIDIA/nvbench#207), DGX H100 idle
//     power ~64 W via Redfish (DGX B200/H100 user guide, power capping);
//   - PCI device IDs: the PCI ID repository (pci-ids.ucw.cz), vendor 10de.
//
// Idle power, full-load temperature and thermal thresholds vary by board,
// VBIOS and cooling; they are typical values, good enough for plausibility
// checks, not for exact matching. VBIOS strings are representative formats.
var profiles = []Profile{
	{
		Key: "h100-sxm-80gb", Name: "NVIDIA H100 80GB HBM3", PCIDeviceID: 0x233010DE,
		MemoryMiB: 81559, TDPW: 700, IdlePowerW: 70, ComputeMajor: 9, ComputeMinor: 0,
		MaxSMClockMHz: 1980, MaxMemClockMHz: 2619, IdleSMClockMHz: 345, IdleMemClockMHz: 2619,
		MaxOperatingC: 87, SlowdownC: 89, ShutdownC: 92, FullLoadC: 72,
		ECC: true, MIG: true, Serial: true, VBIOS: "96.00.99.00.01",
	},
	{
		Key: "a100-sxm-80gb", Name: "NVIDIA A100-SXM4-80GB", PCIDeviceID: 0x20B210DE,
		MemoryMiB: 81920, TDPW: 400, IdlePowerW: 60, ComputeMajor: 8, ComputeMinor: 0,
		MaxSMClockMHz: 1410, MaxMemClockMHz: 1593, IdleSMClockMHz: 210, IdleMemClockMHz: 1593,
		MaxOperatingC: 85, SlowdownC: 89, ShutdownC: 92, FullLoadC: 70,
		ECC: true, MIG: true, Serial: true, VBIOS: "92.00.45.00.05",
	},
	{
		Key: "l40s", Name: "NVIDIA L40S", PCIDeviceID: 0x26B910DE,
		MemoryMiB: 46068, TDPW: 350, IdlePowerW: 35, ComputeMajor: 8, ComputeMinor: 9,
		MaxSMClockMHz: 2520, MaxMemClockMHz: 9001, IdleSMClockMHz: 210, IdleMemClockMHz: 405,
		MaxOperatingC: 88, SlowdownC: 95, ShutdownC: 98, FullLoadC: 78,
		ECC: true, MIG: false, Serial: true, VBIOS: "95.02.3C.00.01",
	},
	{
		Key: "rtx-4090", Name: "NVIDIA GeForce RTX 4090", PCIDeviceID: 0x268410DE,
		MemoryMiB: 24564, TDPW: 450, IdlePowerW: 22, ComputeMajor: 8, ComputeMinor: 9,
		MaxSMClockMHz: 3105, MaxMemClockMHz: 10501, IdleSMClockMHz: 210, IdleMemClockMHz: 405,
		MaxOperatingC: 90, SlowdownC: 95, ShutdownC: 98, FullLoadC: 70,
		ECC: false, MIG: false, Serial: false, VBIOS: "95.02.18.80.5F",
	},
	{
		Key: "a10", Name: "NVIDIA A10", PCIDeviceID: 0x223610DE,
		MemoryMiB: 23028, TDPW: 150, IdlePowerW: 18, ComputeMajor: 8, ComputeMinor: 6,
		MaxSMClockMHz: 1695, MaxMemClockMHz: 6251, IdleSMClockMHz: 210, IdleMemClockMHz: 405,
		MaxOperatingC: 88, SlowdownC: 95, ShutdownC: 98, FullLoadC: 78,
		ECC: true, MIG: false, Serial: true, VBIOS: "94.02.5C.00.02",
	},
	{
		Key: "t4", Name: "Tesla T4", PCIDeviceID: 0x1EB810DE,
		MemoryMiB: 15360, TDPW: 70, IdlePowerW: 10, ComputeMajor: 7, ComputeMinor: 5,
		MaxSMClockMHz: 1590, MaxMemClockMHz: 5001, IdleSMClockMHz: 300, IdleMemClockMHz: 405,
		MaxOperatingC: 85, SlowdownC: 93, ShutdownC: 96, FullLoadC: 76,
		ECC: true, MIG: false, Serial: true, VBIOS: "90.04.96.00.02",
	},
}

// ProfileKeys returns the keys of the built-in profiles, sorted.
func ProfileKeys() []string {
	keys := make([]string, 0, len(profiles))
	for _, p := range profiles {
		keys = append(keys, p.Key)
	}
	slices.Sort(keys)
	return keys
}

// LookupProfile returns the built-in profile with the given key.
func LookupProfile(key string) (Profile, bool) {
	for _, p := range profiles {
		if p.Key == key {
			return p, true
		}
	}
	return Profile{}, false
}

// KnownProfiles returns a copy of all built-in profiles.
func KnownProfiles() []Profile { return slices.Clone(profiles) }
