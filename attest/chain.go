package attest

import (
	"slices"
)

// RecordsVersion is the payload version of every record kind this package
// defines (chain entries, vouchers, receipts, fraud proofs, chain heads).
const RecordsVersion = 1

// Size limits of this package's records, in envelope bytes. A telemetry
// entry for 8 GPUs is about 2 KiB; MaxGPUs GPUs with MaxXIDsPerGPU XIDs each
// still fit in MaxEntrySize. A fraud proof must fit in one gossip message.
const (
	MaxEntrySize      = 64 << 10
	MaxVoucherSize    = 2 << 10
	MaxReceiptSize    = 4 << 10
	MaxFraudProofSize = 256 << 10
	MaxHeadSize       = 1 << 10
)

// EntryKind is one of the three kinds of chain entry.
type EntryKind string

// Chain entry kinds.
const (
	KindFingerprint EntryKind = "fingerprint"
	KindTelemetry   EntryKind = "telemetry"
	KindJob         EntryKind = "job"
)

// RunEntryVersion is the chain-entry version of a job event that records
// what ran: the artifact and the run settings (JobEvent.Artifact, Run).
// Every other entry, and a job event without them, is RecordsVersion, so
// the heartbeats every node reads keep the version all releases read.
const RunEntryVersion = 2

// ChainEntryKind is the record kind of provider chain entries.
var ChainEntryKind = Register(Kind{
	Name: "chain-entry", Domain: "idlegrid-chain-entry", PayloadType: []byte("/idlegrid/chain-entry/1"),
	Versions: []uint{RecordsVersion, RunEntryVersion}, MaxSize: MaxEntrySize,
})

// Entry is one link of a provider's hash chain (DESIGN.md §8). Entry n has
// Seq n and Prev = RecordID of entry n-1's envelope, and is signed by the
// provider's key, so two different entries with one Seq are a
// self-verifying equivocation proof. Exactly one body is set, the one Kind
// names.
type Entry struct {
	V        uint   `cbor:"v"`
	Provider string `cbor:"provider"` // peer ID of the signer
	Seq      uint64 `cbor:"seq"`      // 0 for the first entry
	// Prev is the record ID of the previous entry's envelope; empty iff
	// Seq is 0.
	Prev        string       `cbor:"prev,omitempty"`
	AtMs        int64        `cbor:"at_ms"` // when the entry was appended
	Kind        EntryKind    `cbor:"kind"`
	Fingerprint *Fingerprint `cbor:"fingerprint,omitempty"`
	Telemetry   *Telemetry   `cbor:"telemetry,omitempty"`
	Job         *JobEvent    `cbor:"job,omitempty"`
}

// RecordKind implements Payload.
func (Entry) RecordKind() *Kind { return ChainEntryKind }

// Body is the content of an entry: *Fingerprint, *Telemetry or *JobEvent.
type Body interface {
	EntryKind() EntryKind
	isBody()
}

// Body returns the entry's body, or nil when none of the three is set.
func (e *Entry) Body() Body {
	switch {
	case e.Fingerprint != nil:
		return e.Fingerprint
	case e.Telemetry != nil:
		return e.Telemetry
	case e.Job != nil:
		return e.Job
	}
	return nil
}

// setBody stores b in the field its kind names and sets Kind.
func (e *Entry) setBody(b Body) {
	e.Fingerprint, e.Telemetry, e.Job = nil, nil, nil
	switch b := b.(type) {
	case *Fingerprint:
		e.Fingerprint = b
	case *Telemetry:
		e.Telemetry = b
	case *JobEvent:
		e.Job = b
	}
	e.Kind = b.EntryKind()
}

// Leases returns the lease IDs the entry concerns, sorted and without
// duplicates: the job event's lease, or the leases a telemetry window
// attributes GPUs to. A node streams exactly these entries to a lease's
// renter. Fingerprints concern no lease (renters fetch them by ID).
func (e *Entry) Leases() []string {
	var out []string
	switch {
	case e.Job != nil:
		out = append(out, e.Job.Lease)
	case e.Telemetry != nil:
		for _, g := range e.Telemetry.GPUs {
			if g.Lease != "" {
				out = append(out, g.Lease)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Fingerprint is the hardware a provider offers, appended at start and
// whenever it changes. Telemetry names the fingerprint in force by record ID.
type Fingerprint struct {
	Driver string `cbor:"driver"` // e.g. "550.54.15"
	CUDA   string `cbor:"cuda"`   // highest CUDA version the driver supports, "12.4"
	// HostHash is an optional lower-case hex SHA-256 of the hostname: it
	// ties GPUs to one machine without disclosing its name.
	HostHash string    `cbor:"host_hash,omitempty"`
	GPUs     []GPUFact `cbor:"gpus"`
}

// GPUFact is the static identity and limits of one GPU.
type GPUFact struct {
	UUID        string `cbor:"uuid"` // "GPU-xxxxxxxx-..."
	Name        string `cbor:"name"` // NVML name, "NVIDIA H100 80GB HBM3"
	Serial      string `cbor:"serial,omitempty"`
	PCIBusID    string `cbor:"pci_bus,omitempty"` // "00000000:18:00.0"
	PCIDeviceID uint32 `cbor:"pci_dev"`           // device<<16 | vendor, 0x233010DE
	VBIOS       string `cbor:"vbios,omitempty"`
	MemoryMiB   uint64 `cbor:"mem_mib"`
	ComputeCap  string `cbor:"cc"` // "9.0"
	// PowerLimitMW is the enforced power limit in milliwatts (NVML's unit).
	PowerLimitMW   uint64 `cbor:"power_limit_mw"`
	MaxSMClockMHz  uint32 `cbor:"max_sm_mhz,omitempty"`
	MaxMemClockMHz uint32 `cbor:"max_mem_mhz,omitempty"`
}

// EntryKind implements Body.
func (*Fingerprint) EntryKind() EntryKind { return KindFingerprint }
func (*Fingerprint) isBody()              {}

// GPU returns the fact for uuid.
func (f *Fingerprint) GPU(uuid string) (GPUFact, bool) {
	for _, g := range f.GPUs {
		if g.UUID == uuid {
			return g, true
		}
	}
	return GPUFact{}, false
}

// Telemetry is one attested window of per-GPU measurements. Build it with
// [TelemetryWindow].
//
// Units are integers chosen so no float reaches the wire: utilization in
// basis points (hundredths of a percent, 0..10000), power in milliwatts,
// energy in millijoules, memory in MiB, temperature in whole degrees C.
type Telemetry struct {
	StartMs int64 `cbor:"start_ms"`
	EndMs   int64 `cbor:"end_ms"`
	// Fingerprint is the record ID of the fingerprint entry in force.
	Fingerprint string         `cbor:"fingerprint"`
	GPUs        []GPUTelemetry `cbor:"gpus"`
}

// GPUTelemetry is one GPU's aggregate over a window.
type GPUTelemetry struct {
	UUID          string `cbor:"uuid"`
	Samples       uint32 `cbor:"samples"`
	UtilMinBP     uint32 `cbor:"util_min_bp"`
	UtilAvgBP     uint32 `cbor:"util_avg_bp"`
	UtilMaxBP     uint32 `cbor:"util_max_bp"`
	MemUsedMaxMiB uint64 `cbor:"mem_max_mib"`
	TempMaxC      uint32 `cbor:"temp_max_c"`
	PowerAvgMW    uint64 `cbor:"power_avg_mw"`
	PowerMaxMW    uint64 `cbor:"power_max_mw"`
	// EnergyMJ is the increase of the cumulative energy counter over
	// EnergyMs milliseconds of the window (first to last sample).
	EnergyMJ uint64 `cbor:"energy_mj"`
	EnergyMs uint64 `cbor:"energy_ms"`
	// EnergyReset marks a window in which the counter went backwards (a
	// driver reload): the interval across the reset is left out of both
	// EnergyMJ and EnergyMs rather than guessed.
	EnergyReset    bool   `cbor:"energy_reset,omitempty"`
	ECCCorrected   uint64 `cbor:"ecc_corr,omitempty"`   // delta over the window
	ECCUncorrected uint64 `cbor:"ecc_uncorr,omitempty"` // delta over the window
	XIDs           []XID  `cbor:"xids,omitempty"`
	// XIDOverflow counts XIDs beyond MaxXIDsPerGPU that were not listed.
	XIDOverflow uint32 `cbor:"xid_overflow,omitempty"`
	// Throttle is the OR of the NVML clocks-event reason bits seen.
	Throttle uint64 `cbor:"throttle,omitempty"`
	// Lease is the lease that ran on the GPU in the window ("" idle) and
	// Renter that lease's renter. A window names one lease per GPU.
	Lease  string `cbor:"lease,omitempty"`
	Renter string `cbor:"renter,omitempty"`
}

// XID is one driver XID event.
type XID struct {
	Code uint64 `cbor:"code"`
	AtMs int64  `cbor:"at_ms"`
}

// EntryKind implements Body.
func (*Telemetry) EntryKind() EntryKind { return KindTelemetry }
func (*Telemetry) isBody()              {}

// JobEventKind is what happened to a job.
type JobEventKind string

// Job events. Every event but Started ends the lease's use of its GPUs.
const (
	JobStarted   JobEventKind = "started"
	JobFinished  JobEventKind = "finished"
	JobPreempted JobEventKind = "preempted"
	JobCancelled JobEventKind = "cancelled"
	JobFailed    JobEventKind = "failed"
)

// Ends reports whether the event ends the lease's use of its GPUs. A node
// that restarts with a lease still open appends JobFailed for it before
// giving its GPUs to anyone else; otherwise its own chain proves a double
// lease.
func (k JobEventKind) Ends() bool {
	switch k {
	case JobFinished, JobPreempted, JobCancelled, JobFailed:
		return true
	}
	return false
}

// JobEvent records a job's start or end on a lease.
type JobEvent struct {
	Lease  string       `cbor:"lease"`  // award record ID
	Renter string       `cbor:"renter"` // peer ID
	Job    string       `cbor:"job"`    // job spec CID
	Event  JobEventKind `cbor:"event"`
	GPUs   []string     `cbor:"gpus,omitempty"` // UUIDs; none for CPU-only wasm
	// ExitCode and Output are set on finished (and failed, when known).
	ExitCode int32  `cbor:"exit_code,omitempty"`
	Output   string `cbor:"output,omitempty"` // output CID
	// Artifact and Run (entry version RunEntryVersion) bind the result to
	// what determined it beyond the job spec, which names the module or
	// image only by reference: Artifact is the content address of what
	// ran, the WASM module's CID or the container image's ID
	// ("sha256:<hex>", the digest of its config, which pins every
	// layer); Run the limits it ran under. A finished event of that
	// version carries both.
	Artifact string       `cbor:"artifact,omitempty"`
	Run      *RunSettings `cbor:"run,omitempty"`
}

// RunSettings are the runtime settings of a job's run that can change its
// result: the runtime and the resources and network it was given (the
// time bound is left out: a run that finished within it gives the same
// output under any longer one, and it differs between replicas).
type RunSettings struct {
	Runtime   string `cbor:"runtime" json:"runtime"`                             // "wasm", "docker"
	CPUMilli  uint32 `cbor:"cpu_milli,omitempty" json:"cpu_milli,omitempty"`     // CPU limit, 1/1000 cores; 0: none
	MemoryMiB uint32 `cbor:"memory_mib,omitempty" json:"memory_mib,omitempty"`   // memory limit; 0: the runtime's default
	DiskMiB   uint32 `cbor:"disk_mib,omitempty" json:"disk_mib,omitempty"`       // scratch disk limit; 0: the runtime's default
	Network   string `cbor:"network" json:"network"`                             // "none" or "egress"
	GPUs      uint16 `cbor:"gpu_devices,omitempty" json:"gpu_devices,omitempty"` // GPU devices handed to the workload
}

// EntryKind implements Body.
func (*JobEvent) EntryKind() EntryKind { return KindJob }
func (*JobEvent) isBody()              {}
