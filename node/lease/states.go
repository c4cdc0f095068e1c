package lease

import "fmt"

// State is a lease's state, on both sides: the provider records it as the
// work moves, the renter mirrors it over the job protocol. Stored leases
// keep it as a string (store.Lease.State); the constants are untyped so
// they compare with either.
type State string

// Lease states.
const (
	// Awarded: countersigned, not started (it may wait for the preemption
	// notice owed to a bronze lease on the same GPUs).
	Awarded = "awarded"
	// Preparing: the provider fetches the spec and artifacts and creates
	// the workload.
	Preparing = "preparing"
	Running   = "running"
	Completed = "completed"
	Preempted = "preempted"
	Cancelled = "cancelled"
	Failed    = "failed"
	Expired   = "expired"
	// Unverified is the renter's record of a lease its provider reported
	// completed but whose chain or output does not prove it (the reason
	// says what is missing). Only the renter records it; it counts as a
	// failure in reputation and is not paid past what telemetry proved.
	Unverified = "unverified"
)

// Terminal reports whether a lease in s has ended for good.
func (s State) Terminal() bool {
	switch s {
	case Completed, Preempted, Cancelled, Failed, Expired, Unverified:
		return true
	}
	return false
}

// Valid reports whether s is a state a provider may report (a peer's
// status report is checked against it): Unverified is the renter's
// verdict, never a provider's.
func (s State) Valid() bool {
	switch s {
	case Awarded, Preparing, Running:
		return true
	case Unverified:
		return false
	}
	return s.Terminal()
}

// JobState is a job's state on the renter.
type JobState string

// Job states.
const (
	JobAuctioning = "auctioning"
	JobRunning    = "running"
	JobPreempted  = "preempted"
	JobCompleted  = "completed"
	JobFailed     = "failed"
	JobUnfilled   = "unfilled"
	JobCancelled  = "cancelled"
	JobExpired    = "expired"
	// JobUnverified: a lease's provider said the work completed, but its
	// signed chain or its output did not prove it.
	JobUnverified = "unverified"
)

// Terminal reports whether a job in s has ended for good.
func (s JobState) Terminal() bool {
	switch s {
	case JobCompleted, JobFailed, JobUnfilled, JobCancelled, JobExpired, JobUnverified:
		return true
	}
	return false
}

// Side says which party's copy of a lease a stored record is.
type Side = string

// The two sides of a lease.
const (
	SideProvider Side = "provider"
	SideRenter   Side = "renter"
)

// Short is the one short form of an ID (a record ID, a CID, a peer ID)
// in logs, job events, the CLI and the dashboard: "bafkre…2psm5v6u", the
// first six characters, which say what kind of ID it is, and the last
// eight, which are unique enough within one node's records. api.ResolveID
// takes it back, as it takes the last eight alone.
func Short(id string) string {
	if len(id) > 16 {
		return id[:6] + "…" + id[len(id)-8:]
	}
	return id
}

// USD formats micro-dollars as dollars.
func USD(micro uint64) string { return fmt.Sprintf("$%.4f", float64(micro)/1e6) }
