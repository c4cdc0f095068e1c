package reputation

import "time"

// State is how a lease ended.
type State uint8

// Lease states. The zero value is not a state; evidence carrying it, or any
// other unknown state, is neutral.
const (
	StateCompleted         State = iota + 1 // the job finished and the lease was settled
	StateFailed                             // the provider failed the job (crash, bad output, lost GPU)
	StateExpired                            // the lease ran out without the work being delivered
	StateCancelledByRenter                  // the renter ended the lease early
	StatePreempted                          // a bronze lease preempted with its notice honoured
	StateUnreachable                        // the provider stopped answering during the lease
)

var stateNames = [...]string{
	StateCompleted:         "completed",
	StateFailed:            "failed",
	StateExpired:           "expired",
	StateCancelledByRenter: "cancelled-by-renter",
	StatePreempted:         "preempted",
	StateUnreachable:       "provider-unreachable",
}

func (s State) String() string {
	if int(s) < len(stateNames) && stateNames[s] != "" {
		return stateNames[s]
	}
	return "unknown"
}

// States lists every known lease state.
var States = []State{StateCompleted, StateFailed, StateExpired, StateCancelledByRenter, StatePreempted, StateUnreachable}

// Effect is what a lease state counts as in the score.
type Effect uint8

// Effects. The zero value is neutral.
const (
	EffectNeutral Effect = iota // not counted
	EffectSuccess
	EffectFailure
)

func (e Effect) String() string {
	switch e {
	case EffectNeutral:
		return "neutral"
	case EffectSuccess:
		return "success"
	case EffectFailure:
		return "failure"
	}
	return "unknown"
}

// Outcome is the end of a lease this node held with the provider: first-hand
// evidence, weighted [Config.OwnWeight].
type Outcome struct {
	Lease    string // lease ID; one outcome counts per lease
	Provider string // provider peer ID
	EndedAt  time.Time
	State    State
	// GPUHours is the size of the lease as awarded: GPUs times booked
	// duration in hours. Booked rather than delivered, so that failing a
	// lease early does not make the failure cheaper.
	GPUHours float64
}

// Receipt is a countersigned lease receipt gossiped by another renter:
// second-hand evidence, weighted [Config.GossipWeight]. The caller verifies
// signatures before passing receipts in.
type Receipt struct {
	Lease    string // lease ID; one receipt counts per (provider, lease)
	Provider string
	Renter   string // renter peer ID; receipts with Renter == Provider are ignored
	At       time.Time
	State    State
	GPUHours float64 // as in [Outcome.GPUHours]
}

// Uptime is a window over which this node watched the provider's
// heartbeats on the attestation topic.
type Uptime struct {
	Provider string
	From, To time.Time
	Seen     int // heartbeats received in the window
	Expected int // heartbeats the provider should have sent; windows with 0 are ignored
}

// Fraud is a verified fraud proof against the provider (two signed chain
// entries with one sequence number, one GPU leased twice at once).
type Fraud struct {
	Provider string
	At       time.Time // when the proof was verified
	Proof    string    // record ID of the proof, for the operator; not used by the fold
}

// Evidence is everything known about any number of providers.
type Evidence struct {
	Outcomes []Outcome
	Receipts []Receipt
	Uptime   []Uptime
	Frauds   []Fraud
}

// only returns the evidence about provider p.
func (ev Evidence) only(p string) Evidence {
	var out Evidence
	for _, o := range ev.Outcomes {
		if o.Provider == p {
			out.Outcomes = append(out.Outcomes, o)
		}
	}
	for _, r := range ev.Receipts {
		if r.Provider == p {
			out.Receipts = append(out.Receipts, r)
		}
	}
	for _, u := range ev.Uptime {
		if u.Provider == p {
			out.Uptime = append(out.Uptime, u)
		}
	}
	for _, f := range ev.Frauds {
		if f.Provider == p {
			out.Frauds = append(out.Frauds, f)
		}
	}
	return out
}

// byProvider splits the evidence by provider.
func (ev Evidence) byProvider() map[string]*Evidence {
	m := map[string]*Evidence{}
	get := func(p string) *Evidence {
		e := m[p]
		if e == nil {
			e = &Evidence{}
			m[p] = e
		}
		return e
	}
	for _, o := range ev.Outcomes {
		e := get(o.Provider)
		e.Outcomes = append(e.Outcomes, o)
	}
	for _, r := range ev.Receipts {
		e := get(r.Provider)
		e.Receipts = append(e.Receipts, r)
	}
	for _, u := range ev.Uptime {
		e := get(u.Provider)
		e.Uptime = append(e.Uptime, u)
	}
	for _, f := range ev.Frauds {
		e := get(f.Provider)
		e.Frauds = append(e.Frauds, f)
	}
	return m
}
