package lease

import "time"

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
