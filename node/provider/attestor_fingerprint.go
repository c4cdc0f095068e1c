package provider

import (
	"fmt"
	"math"
	"slices"

	"github.com/idlegrid/idlegrid/attest"
)

// fingerprintID is the record ID of the fingerprint in force; "" before
// one is appended (a host without GPUs never appends one).
func (a *attestor) fingerprintID() string {
	if h := a.chain.Head(); h != nil {
		return h.Fingerprint
	}
	return ""
}

// fingerprint appends a fingerprint entry unless the last one still
// describes the hardware.
func (a *attestor) fingerprint() error {
	devs, err := a.gpus.Devices()
	if err != nil && len(devs) == 0 {
		return err
	}
	if len(devs) == 0 {
		// A GPU-less host (CPU shares only) has no hardware to attest: a
		// fingerprint must name 1..64 GPUs, so appending one would only
		// log a validation error a user cannot act on.
		a.log.Info("no GPUs: no hardware fingerprint to attest")
		return nil
	}
	fp := &attest.Fingerprint{}
	for _, d := range devs {
		if fp.Driver == "" {
			fp.Driver, fp.CUDA = d.DriverVersion, d.CUDAVersion
		}
		fp.GPUs = append(fp.GPUs, attest.GPUFact{
			UUID: d.UUID, Name: d.Name, Serial: d.Serial, PCIBusID: d.PCIBusID, PCIDeviceID: d.PCIDeviceID,
			VBIOS: d.VBIOSVersion, MemoryMiB: d.MemoryMiB, ComputeCap: fmt.Sprintf("%d.%d", d.ComputeMajor, d.ComputeMinor),
			PowerLimitMW: uint64(math.Round(d.PowerLimitW * 1000)), MaxSMClockMHz: d.MaxSMClockMHz, MaxMemClockMHz: d.MaxMemClockMHz,
		})
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if raw := a.currentFingerprint(); raw != nil {
		if prev, err := attest.OpenEntry(raw); err == nil && prev.Fingerprint != nil && fingerprintsEqual(prev.Fingerprint, fp) {
			return nil
		}
	}
	_, err = a.append(fp)
	return err
}

func fingerprintsEqual(x, y *attest.Fingerprint) bool {
	return x.Driver == y.Driver && x.CUDA == y.CUDA && slices.Equal(x.GPUs, y.GPUs)
}

// currentFingerprint returns the raw fingerprint entry in force, which a
// verifier of later telemetry needs; nil before the first. It is the one
// this attestor appended, or else one found among the last
// fingerprintLookBack entries (at open). A chain whose fingerprint lies
// deeper has none in force here, so fingerprint() states it again rather
// than reading back through months of telemetry.
func (a *attestor) currentFingerprint() []byte {
	h := a.chain.Head()
	if h == nil || h.Fingerprint == "" {
		return nil
	}
	if p := a.fingerprintRaw.Load(); p != nil && attest.RecordID(*p).String() == h.Fingerprint {
		return *p
	}
	from := uint64(0)
	if h.Seq > fingerprintLookBack {
		from = h.Seq - fingerprintLookBack
	}
	raws, err := a.db.ChainEntries(a.chain.Provider(), from, h.Seq)
	if err != nil {
		return nil
	}
	for i := len(raws) - 1; i >= 0; i-- {
		if attest.RecordID(raws[i]).String() == h.Fingerprint {
			a.fingerprintRaw.Store(&raws[i])
			return raws[i]
		}
	}
	return nil
}

// fingerprintLookBack bounds how far back currentFingerprint reads the
// store for a fingerprint it did not append itself.
const fingerprintLookBack = 4096
