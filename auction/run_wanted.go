package auction

import "github.com/idlegrid/idlegrid/attest"

// RunWanted is what the workload determines about a run, against which a
// provider's signed finished event is checked (attest.RunWanted.CheckRun):
// the module's CID for WASM (a container image is pinned by its manifest
// digest, which the image ID the provider records cannot be compared with
// offline), the runtime, whether egress is allowed, and the resources the
// spec asks, in the units the provider's executor limits use.
func (w *Workload) RunWanted() attest.RunWanted {
	want := attest.RunWanted{
		Runtime: w.Runtime, Egress: w.Egress,
		CPUMilli:  uint32(float64(w.Resources.CPUCores) * 1000),
		MemoryMiB: uint32(w.Resources.RAMMiB),
		DiskMiB:   uint32(w.Resources.DiskGiB << 10),
	}
	if w.Runtime == "wasm" {
		want.Artifact = w.Module
	}
	return want
}
