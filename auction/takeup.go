package auction

import (
	"fmt"
	"math"
	"time"
)

// Take-up: an award commits the provider's GPUs at once, but the renter
// commits nothing until it serves the job's spec (the provider fetches it
// right after countersigning). A renter that awards and never serves the
// spec would keep the GPUs from everyone else for nothing, so the
// provider waits TakeUpPatience for the spec, then releases the GPUs and
// notes the award abandoned (AbandonNote); and before that, what it bids
// and commits to a renter depends on the renter's standing here: paid
// history, awards outstanding, abandons seen here and noted by others.
// Identities are free, so a renter without paid history gets little
// (TakeUpLimits): a few awards outstanding, and while other such renters
// hold awards not taken up, no more than a share of the provider's GPUs
// all together.

// TakeUpPatience is how long a provider waits for a renter to serve an
// awarded job's spec before it releases the award's GPUs. An honest
// renter serves it within a round trip of the award; the patience only
// has to cover a slow link and a few retries.
const TakeUpPatience = 10 * time.Second

// RenterStanding is what a provider knows of one renter when it bids for
// the renter's RFQ or takes its award.
type RenterStanding struct {
	// Paid: the renter paid for a lease this provider receipted.
	Paid bool
	// Unconfirmed is how many of the renter's awards here are not taken
	// up yet (spec not served), and UnconfirmedGPUs their GPUs.
	Unconfirmed     int
	UnconfirmedGPUs int
	// Abandoned counts the renter's awards here that it abandoned within
	// AbandonNoteFor.
	Abandoned int
	// Noted counts the other providers whose verified notes name the
	// renter within AbandonNoteFor (each provider once).
	Noted int
}

// TakeUpLimits bound what a provider bids and commits to renters before
// they take their awards up.
type TakeUpLimits struct {
	// FreshUnconfirmed and PaidUnconfirmed bound one renter's awards
	// outstanding, without and with paid history.
	FreshUnconfirmed int
	PaidUnconfirmed  int
	// FreshShare is the fraction of the provider's GPUs that the
	// outstanding awards of renters without paid history may hold at
	// once. A renter's own outstanding awards do not count against it
	// (its per-renter bound does), so one new renter can lease a whole
	// small provider, and its burst of jobs is not declined by itself.
	FreshShare float64
	// RefuseAbandoned and RefuseNoted: a renter that abandoned that many
	// awards here, or that many other providers noted, gets no bid and
	// no award until the abandons age out (AbandonNoteFor). Abandons here
	// and notes count together towards RefuseNoted.
	RefuseAbandoned int
	RefuseNoted     int
}

// DefaultTakeUpLimits are the provider's defaults.
func DefaultTakeUpLimits() TakeUpLimits {
	return TakeUpLimits{FreshUnconfirmed: 4, PaidUnconfirmed: 16, FreshShare: 0.5, RefuseAbandoned: 2, RefuseNoted: 3}
}

// Suspect reports whether s shows any abandon: such a renter is treated
// as one without paid history, whatever it paid.
func (s RenterStanding) Suspect() bool { return s.Abandoned > 0 || s.Noted > 0 }

// Refused reports why a renter with standing s gets no bid or award at
// all, or "" when it may.
func (lim TakeUpLimits) Refused(s RenterStanding) string {
	switch {
	case lim.RefuseAbandoned > 0 && s.Abandoned >= lim.RefuseAbandoned:
		return fmt.Sprintf("the renter abandoned %d awards here within %s", s.Abandoned, AbandonNoteFor)
	case lim.RefuseNoted > 0 && s.Abandoned+s.Noted >= lim.RefuseNoted:
		return fmt.Sprintf("the renter abandoned awards at %d providers within %s", s.Abandoned+s.Noted, AbandonNoteFor)
	}
	return ""
}

// FreshLoad is what the outstanding awards of other renters without paid
// history (and of suspect renters) hold at one provider.
type FreshLoad struct {
	// Awards and GPUs are those awards and their GPUs.
	Awards, GPUs int
	// TotalGPUs is the provider's GPU count.
	TotalGPUs int
	// Abandoned: a renter abandoned an award here within AbandonAlertFor.
	// Then a renter without paid history gets no more than the share,
	// its own outstanding awards included, so keys made for one attack
	// round each cannot take a whole provider in turn.
	Abandoned bool
}

// AbandonAlertFor is how long after an abandoned award a provider keeps
// renters without paid history within the share (FreshLoad.Abandoned).
const AbandonAlertFor = 10 * time.Minute

// Unbounded is the allowance of a renter the take-up limits do not bound.
const Unbounded = math.MaxInt

// Allowance is how many GPUs a provider may bid and commit to a renter
// with standing s now (Unbounded: no bound here), and why none when 0.
func (lim TakeUpLimits) Allowance(s RenterStanding, fresh FreshLoad) (gpus int, why string) {
	if why := lim.Refused(s); why != "" {
		return 0, why
	}
	if s.Paid && !s.Suspect() {
		if lim.PaidUnconfirmed > 0 && s.Unconfirmed >= lim.PaidUnconfirmed {
			return 0, fmt.Sprintf("the renter has %d awards here not taken up yet", s.Unconfirmed)
		}
		return Unbounded, ""
	}
	if lim.FreshUnconfirmed > 0 && s.Unconfirmed >= lim.FreshUnconfirmed {
		return 0, fmt.Sprintf("the renter has %d awards here not taken up yet (a renter without paid history: at most %d)", s.Unconfirmed, lim.FreshUnconfirmed)
	}
	if lim.FreshShare <= 0 {
		return Unbounded, ""
	}
	used := fresh.GPUs
	switch {
	case fresh.Abandoned:
		used += s.UnconfirmedGPUs
	case fresh.Awards == 0:
		return Unbounded, ""
	}
	share := int(math.Ceil(lim.FreshShare * float64(fresh.TotalGPUs)))
	if left := share - used; left > 0 {
		return left, ""
	}
	return 0, fmt.Sprintf("renters without paid history hold %d of this provider's %d GPUs in awards not taken up yet (at most %d)", used, fresh.TotalGPUs, share)
}

// AdmitUnconfirmed says why a provider declines a new award of gpus GPUs
// from a renter with standing s, given what other fresh renters hold
// already, or "" when it may take it (Allowance). Taking it up releases
// it from these limits at once.
func (lim TakeUpLimits) AdmitUnconfirmed(s RenterStanding, gpus int, fresh FreshLoad) string {
	n, why := lim.Allowance(s, fresh)
	switch {
	case why != "":
		return why
	case gpus > n:
		return fmt.Sprintf("a renter without paid history may have %d more GPUs here in awards not taken up yet, not %d", n, gpus)
	}
	return ""
}
