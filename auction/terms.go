package auction

import (
	"fmt"
	"time"
)

// LeaseTerms are the timing and tolerances both parties of a lease hold
// each other to (docs/protocol.md §7.8): how often the provider signs a
// telemetry window, how often and how late the renter pays, how much is
// paid ahead, and what the renter's verifier accepts. The provider offers
// them in its bid and the renter accepts them in its award, so both judge
// the lease by the same numbers, whatever their own configs say.
type LeaseTerms struct {
	// WindowMs is the provider's telemetry cadence: one signed window at
	// least this often while the lease runs.
	WindowMs uint32 `cbor:"window_ms"`
	// VoucherMs is the voucher interval: the unit prepayment counts in and
	// part of how far payments may lag (Allowance).
	VoucherMs uint32 `cbor:"voucher_ms"`
	// GraceMs is how long past the allowance a provider keeps working
	// unpaid, and a renter keeps waiting for telemetry, before stopping.
	GraceMs uint32 `cbor:"grace_ms"`
	// Prepay is how many voucher intervals the renter pays ahead at the
	// start; omitted when 0.
	Prepay uint32 `cbor:"prepay,omitempty"`
	// EnergyTolPermille is the gap between reported energy and average
	// power × time the renter's verifier accepts, in permille.
	EnergyTolPermille uint32 `cbor:"energy_tol_permille"`
	// MaxSkewMs is how far ahead of the renter's clock a telemetry time may
	// be: at most that much work is paid before it is done.
	MaxSkewMs uint32 `cbor:"max_skew_ms"`
}

// Bounds of LeaseTerms (docs/protocol.md §7.8). Below 100 ms telemetry and
// payments cost more than they protect; above 10 minutes a silent party
// holds the other for too long.
const (
	MinTermsPeriodMs = 100
	MaxTermsPeriodMs = 10 * 60 * 1000
	MaxTermsGraceMs  = 10 * 60 * 1000
	MaxTermsPrepay   = 100
	MaxTermsSkewMs   = 10 * 60 * 1000
)

// DefaultLeaseTerms are the terms of a bid or award that carries none (a
// version 1 record): the defaults of config.toml's [attest] section.
var DefaultLeaseTerms = LeaseTerms{
	WindowMs: 60_000, VoucherMs: 60_000, GraceMs: 30_000, EnergyTolPermille: 150, MaxSkewMs: 120_000,
}

// TermsVersion is the version of a bid or award that carries terms;
// MessagesVersion (1) carries none and means DefaultLeaseTerms.
const TermsVersion = 2

// check reports every bound the terms break, under path.
func (t LeaseTerms) check(p *problems, path string) {
	period := func(name string, v uint32) {
		if v < MinTermsPeriodMs || v > MaxTermsPeriodMs {
			p.Addf(path+"."+name, "%d out of range %d..%d", v, MinTermsPeriodMs, MaxTermsPeriodMs)
		}
	}
	period("window_ms", t.WindowMs)
	period("voucher_ms", t.VoucherMs)
	if t.GraceMs > MaxTermsGraceMs {
		p.Addf(path+".grace_ms", "%d exceeds %d", t.GraceMs, MaxTermsGraceMs)
	}
	if t.Prepay > MaxTermsPrepay {
		p.Addf(path+".prepay", "%d exceeds %d", t.Prepay, MaxTermsPrepay)
	}
	if t.EnergyTolPermille == 0 || t.EnergyTolPermille > 1000 {
		p.Addf(path+".energy_tol_permille", "%d out of range 1..1000", t.EnergyTolPermille)
	}
	if t.MaxSkewMs == 0 || t.MaxSkewMs > MaxTermsSkewMs {
		p.Addf(path+".max_skew_ms", "%d out of range 1..%d", t.MaxSkewMs, MaxTermsSkewMs)
	}
}

// Validate checks the terms against the protocol's bounds.
func (t LeaseTerms) Validate() error {
	var p problems
	t.check(&p, "terms")
	return p.Err(ErrInvalidMessage, "lease terms")
}

// Window, VoucherInterval, Grace and MaxSkew are the terms' periods as
// durations.
func (t LeaseTerms) Window() time.Duration { return ms(t.WindowMs) }

// VoucherInterval is the voucher interval.
func (t LeaseTerms) VoucherInterval() time.Duration { return ms(t.VoucherMs) }

// Grace is the grace period.
func (t LeaseTerms) Grace() time.Duration { return ms(t.GraceMs) }

// MaxSkew is the accepted clock skew.
func (t LeaseTerms) MaxSkew() time.Duration { return ms(t.MaxSkewMs) }

// Allowance is how far a running lease's payments may fall behind the
// work, and its telemetry behind the clock, before either side stops:
// one voucher interval or telemetry window, whichever is longer, and the
// grace. Both sides apply this one rule.
func (t LeaseTerms) Allowance() time.Duration {
	return max(t.Window(), t.VoucherInterval()) + t.Grace()
}

// PrepareAllowance is how long a provider may take from its acceptance to
// the lease's `started` chain event (fetching the spec, pulling an image,
// creating the workload) before the renter stops waiting for telemetry.
// The allowance for missing telemetry counts from that event, as the
// provider's for missing payments counts from the work's start. It is a
// protocol constant, not a term: both sides know it without agreeing it.
const PrepareAllowance = 15 * time.Minute

// Prepaid is how much of the work the renter pays before it is done.
func (t LeaseTerms) Prepaid() time.Duration { return time.Duration(t.Prepay) * t.VoucherInterval() }

func ms(v uint32) time.Duration { return time.Duration(v) * time.Millisecond }

// TermsLimits are what a renter accepts of a provider's terms: the terms
// that put its money at risk. Paying ahead (prepayment) and accepting
// telemetry from ahead of its clock (skew) pay for work not yet done; a
// looser energy tolerance accepts telemetry further from the physics. The
// cadence, voucher interval and grace risk only the provider's work, so
// any value within the protocol's bounds is accepted.
type TermsLimits struct {
	MaxPrepaid           time.Duration
	MaxEnergyTolPermille uint32
	MaxSkew              time.Duration
}

// Accepts says why terms t are not acceptable within l, in the renter's
// words, or "" when they are.
func (l TermsLimits) Accepts(t LeaseTerms) string {
	switch {
	case t.Prepaid() > l.MaxPrepaid:
		return fmt.Sprintf("its lease terms ask %d voucher intervals (%s) paid ahead; this renter pays at most %s ahead",
			t.Prepay, t.Prepaid(), l.MaxPrepaid)
	case t.EnergyTolPermille > l.MaxEnergyTolPermille:
		return fmt.Sprintf("its lease terms ask an energy tolerance of %.1f%%; this renter accepts at most %.1f%%",
			float64(t.EnergyTolPermille)/10, float64(l.MaxEnergyTolPermille)/10)
	case t.MaxSkew() > l.MaxSkew:
		return fmt.Sprintf("its lease terms ask a clock skew of %s; this renter accepts at most %s", t.MaxSkew(), l.MaxSkew)
	}
	return ""
}

// termsOf is the version and terms field a bid or award is written with
// for terms t: none (version 1) for the default terms, so that nodes that
// read only version 1 still read it; version 2 otherwise.
func termsOf(t LeaseTerms) (uint, *LeaseTerms) {
	if t == DefaultLeaseTerms {
		return MessagesVersion, nil
	}
	return TermsVersion, &t
}

// checkTermsField checks the terms field of a bid or award against its
// version: absent in version 1, present and within bounds in version 2.
func checkTermsField(p *problems, v uint, t *LeaseTerms) {
	switch v {
	case MessagesVersion:
		if t != nil {
			p.Addf("terms", "set in a version %d record; terms need version %d", MessagesVersion, TermsVersion)
		}
	case TermsVersion:
		if t == nil {
			p.Addf("terms", "missing in a version %d record", TermsVersion)
			return
		}
		t.check(p, "terms")
	default:
		p.Addf("v", "version %d, want %d or %d", v, MessagesVersion, TermsVersion)
	}
}

// LeaseTerms are the terms the bid offers: its own, or the default terms
// when it carries none.
func (b *Bid) LeaseTerms() LeaseTerms {
	if b.Terms != nil {
		return *b.Terms
	}
	return DefaultLeaseTerms
}

// SetTerms writes t into the bid: as a version 2 bid when t are not the
// default terms.
func (b *Bid) SetTerms(t LeaseTerms) { b.V, b.Terms = termsOf(t) }

// LeaseTerms are the terms the award accepts: its own, or the default
// terms when it carries none.
func (a *Award) LeaseTerms() LeaseTerms {
	if a.Terms != nil {
		return *a.Terms
	}
	return DefaultLeaseTerms
}

// SetTerms writes t into the award: as a version 2 award when t are not
// the default terms.
func (a *Award) SetTerms(t LeaseTerms) { a.V, a.Terms = termsOf(t) }
