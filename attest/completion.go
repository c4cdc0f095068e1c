package attest

import (
	"fmt"
	"slices"
)

// Completion is what a renter must see in a provider's chain before it
// records a lease's work completed: the provider's signed word that it
// started and finished the lease's job, exited 0 and produced the output
// the renter holds. A status message saying "completed" is only a hint
// that the chain should now hold this.
type Completion struct {
	Provider string   // peer ID whose chain this is
	Lease    string   // award record ID
	Renter   string   // peer ID
	Job      string   // CID of the job spec the lease runs
	GPUs     []string // UUIDs leased; none for CPU-only work
	// Output is the output CID the provider's status claims (the renter
	// then downloads the output and checks it hashes to this CID).
	Output string
	// Ran is what the job spec asks to run; a finished event that records
	// what ran (entry version RunEntryVersion) must agree with it.
	Ran RunWanted
}

// RunWanted is what a job spec determines about a run, against which a
// finished event's artifact and run settings are checked (CheckRun).
type RunWanted struct {
	// Artifact is the content address the spec pins: a WASM module's
	// CID. Empty when the spec names no address the provider's can be
	// compared with (an image pinned by its manifest digest, whose image
	// ID only the registry could relate to it).
	Artifact string
	Runtime  string
	// Egress: the spec allows the workload outbound network.
	Egress bool
	// The spec's resources; 0 is "not asked" and any limit is accepted.
	CPUMilli, MemoryMiB, DiskMiB uint32
}

// CheckRun reports, in words, how a finished event's record of what ran
// differs from what the job asks; nil when it agrees or records nothing
// (a provider of a release before entry version RunEntryVersion).
func (w RunWanted) CheckRun(j *JobEvent) error {
	if j.Artifact == "" || j.Run == nil {
		return nil
	}
	r := j.Run
	switch {
	case w.Artifact != "" && j.Artifact != w.Artifact:
		return fmt.Errorf("the provider ran %s, the job's module is %s", j.Artifact, w.Artifact)
	case w.Runtime != "" && r.Runtime != w.Runtime:
		return fmt.Errorf("the provider ran it on runtime %s, the job asks %s", r.Runtime, w.Runtime)
	case r.Network != "none" && !w.Egress:
		return fmt.Errorf("the provider gave the job network %q, the job asks none", r.Network)
	case w.CPUMilli != 0 && r.CPUMilli != w.CPUMilli:
		return fmt.Errorf("the provider ran it with %d millicores, the job asks %d", r.CPUMilli, w.CPUMilli)
	case w.MemoryMiB != 0 && r.MemoryMiB != w.MemoryMiB:
		return fmt.Errorf("the provider ran it with a %d MiB memory limit, the job asks %d MiB", r.MemoryMiB, w.MemoryMiB)
	case w.DiskMiB != 0 && r.DiskMiB != w.DiskMiB:
		return fmt.Errorf("the provider ran it with %d MiB of disk, the job asks %d MiB", r.DiskMiB, w.DiskMiB)
	}
	return nil
}

// VerifyCompletion checks a lease's chain segment (the entries from the
// lease's start on, in chain order, as the provider streams them: leading
// fingerprint entries are the fingerprint in force, sent ahead) against
// want and returns the finished event, or an error saying in words why
// the chain does not prove the work. It requires:
//
//   - a started event and then a finished event for the lease, both
//     naming the lease's renter, job spec CID and GPUs;
//   - the finished event's exit code 0 and output CID equal to want.Output;
//   - what the finished event records of the run (artifact, settings)
//     agreeing with want.Ran (RunWanted.CheckRun);
//   - every [Verify] check over the segment up to the finished event,
//     with coverage scoped to the run (from the started to the finished
//     event): for GPU work, telemetry attributing every leased GPU to the
//     lease across the run with no gap over opts.MaxGapMs.
//
// opts supplies the clock, tolerances and the fingerprints sent ahead of
// the segment; its Lease field is replaced. VerifyCompletion is pure.
func VerifyCompletion(segment [][]byte, want Completion, opts VerifyOptions) (*JobEvent, error) {
	if len(segment) == 0 {
		return nil, fmt.Errorf("the provider's chain holds no entries for the lease")
	}
	var started, finished *Entry
	end, ahead := -1, 0
	for i, raw := range segment {
		e, err := OpenEntry(raw)
		if err != nil {
			return nil, fmt.Errorf("chain entry %d does not open: %w", i, err)
		}
		if e.Provider != want.Provider {
			return nil, fmt.Errorf("chain entry %d is signed by %s, not the lease's provider", i, e.Provider)
		}
		if e.Fingerprint != nil && i == ahead {
			ahead++
			continue
		}
		j := e.Job
		if j == nil || j.Lease != want.Lease {
			continue
		}
		if started == nil {
			if j.Event != JobStarted {
				return nil, fmt.Errorf("the chain records the lease %s before its start", j.Event)
			}
			started = e
			continue
		}
		if j.Event.Ends() {
			finished, end = e, i
			break
		}
	}
	switch {
	case started == nil:
		return nil, fmt.Errorf("the provider's chain does not record the lease's start (the work never ran)")
	case finished == nil:
		return nil, fmt.Errorf("the provider's chain does not record the lease's end")
	case finished.Job.Event != JobFinished:
		return nil, fmt.Errorf("the provider's chain records the lease %s, not finished", finished.Job.Event)
	}
	for _, e := range []*Entry{started, finished} {
		j := e.Job
		switch {
		case j.Renter != want.Renter:
			return nil, fmt.Errorf("the chain's %s event names renter %s, not this renter", j.Event, j.Renter)
		case j.Job != want.Job:
			return nil, fmt.Errorf("the chain's %s event is for job spec %s, the lease runs %s", j.Event, j.Job, want.Job)
		case !sameSet(j.GPUs, want.GPUs):
			return nil, fmt.Errorf("the chain's %s event names GPUs %v, the lease holds %v", j.Event, j.GPUs, want.GPUs)
		}
	}
	fin := finished.Job
	switch {
	case fin.ExitCode != 0:
		return nil, fmt.Errorf("the chain records exit code %d, not 0", fin.ExitCode)
	case fin.Output == "":
		return nil, fmt.Errorf("the chain's finished event names no output")
	case fin.Output != want.Output:
		return nil, fmt.Errorf("the chain's finished event names output %s, the provider offers %s", fin.Output, want.Output)
	}
	if err := want.Ran.CheckRun(fin); err != nil {
		return nil, fmt.Errorf("the chain's finished event does not run the job as asked: %w", err)
	}
	opts.Provider = want.Provider
	opts.Fingerprints = append(slices.Clip(opts.Fingerprints), segment[:ahead]...)
	opts.Lease = &LeaseScope{ID: want.Lease, Renter: want.Renter, StartMs: started.AtMs, EndMs: finished.AtMs, GPUs: want.GPUs}
	rep := Verify(segment[ahead:end+1], opts)
	if fs := rep.Failures(); len(fs) > 0 {
		return nil, fmt.Errorf("the lease's chain fails the %q check: %s", fs[0].Check, fs[0].Message)
	}
	return fin, nil
}

// sameSet reports whether a and b hold the same strings, in any order.
func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
