package lease

import (
	"math"
	"time"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/store"
)

// Terms are the attestation and voucher terms both sides of a lease
// apply: how often the provider attests and the renter pays, how late a
// voucher may be, and what a verifier accepts ([attest] in config.toml).
type Terms struct {
	// Sample is how often a provider reads its GPUs' telemetry.
	Sample time.Duration `toml:"sample"`
	// Window is the span of one signed telemetry attestation (and the
	// heartbeat period on idlegrid/attest/1).
	Window time.Duration `toml:"window"`
	// VoucherInterval is how often a renter pays for a running lease.
	VoucherInterval time.Duration `toml:"voucher_interval"`
	// VoucherGrace is how long past a due voucher a provider keeps working
	// (and a renter keeps paying without fresh telemetry).
	VoucherGrace time.Duration `toml:"voucher_grace"`
	// PrepayIntervals is how many voucher intervals a renter pays ahead at
	// the start of a lease (0: pays after each interval).
	PrepayIntervals int `toml:"prepay_intervals"`
	// EnergyTolerance is the accepted relative gap between reported energy
	// and average power x time.
	EnergyTolerance float64 `toml:"energy_tolerance"`
	// MaxSkew is the accepted clock difference in attestation times.
	MaxSkew time.Duration `toml:"max_skew"`
}

// Offer is the lease terms a provider with these settings offers in its
// bids (Sample stays local: it is how the provider measures, not what it
// promises).
func (t Terms) Offer() auction.LeaseTerms {
	return auction.LeaseTerms{
		WindowMs: durMs(t.Window), VoucherMs: durMs(t.VoucherInterval), GraceMs: durMs(t.VoucherGrace),
		Prepay: uint32(max(t.PrepayIntervals, 0)), EnergyTolPermille: t.energyTolPermille(),
		MaxSkewMs: durMs(t.maxSkew()),
	}
}

// Limits is what a renter with these settings accepts of a provider's
// terms: no more paid ahead, no looser energy tolerance and no more clock
// skew than it would ask itself.
func (t Terms) Limits() auction.TermsLimits {
	return auction.TermsLimits{
		MaxPrepaid:           time.Duration(max(t.PrepayIntervals, 0)) * t.VoucherInterval,
		MaxEnergyTolPermille: t.energyTolPermille(),
		MaxSkew:              t.maxSkew(),
	}
}

// energyTolPermille is EnergyTolerance in permille, or the verifier's
// default when it is unset.
func (t Terms) energyTolPermille() uint32 {
	if t.EnergyTolerance <= 0 {
		return attest.DefaultEnergyTolerancePct * 10
	}
	return uint32(min(math.Round(t.EnergyTolerance*1000), 1000))
}

// maxSkew is MaxSkew, or the verifier's default when it is unset.
func (t Terms) maxSkew() time.Duration {
	if t.MaxSkew <= 0 {
		return attest.DefaultMaxSkewMs * time.Millisecond
	}
	return t.MaxSkew
}

func durMs(d time.Duration) uint32 {
	return uint32(min(max(d.Milliseconds(), 0), math.MaxUint32))
}

// Agreed are the terms both parties of l signed: the award's (the
// winning bid's, which the provider checked before countersigning). A
// lease whose award does not open, which the book never stores, gets the
// protocol's default terms.
func Agreed(l *store.Lease) auction.LeaseTerms {
	aw, _, err := auction.OpenAward(l.Award)
	if err != nil {
		return auction.DefaultLeaseTerms
	}
	return aw.LeaseTerms()
}
