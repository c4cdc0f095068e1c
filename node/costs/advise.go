package costs

import "math"

// Usage is what one GPU model measured over a range, summed over its GPUs:
// the inputs of a break-even floor.
type Usage struct {
	OfferedGPUHours float64
	LeasedGPUHours  float64
	// FixedUSD is what accrues by the clock: depreciation and bandwidth.
	FixedUSD float64
	// HostEnergyUSD is the GPUs' share of the host's energy, LeasedEnergyUSD
	// their own energy while leased, IdleEnergyUSD their own while idle.
	HostEnergyUSD   float64
	LeasedEnergyUSD float64
	IdleEnergyUSD   float64
}

// Add sums a GPU's ledger line into the usage of its model.
func (u *Usage) Add(g GPULine) {
	u.OfferedGPUHours += g.OfferedGPUHours
	u.LeasedGPUHours += g.LeasedGPUHours
	u.FixedUSD += g.DepreciationUSD + g.BandwidthUSD
	u.HostEnergyUSD += g.HostEnergyUSD
	u.LeasedEnergyUSD += g.LeasedEnergyUSD
	u.IdleEnergyUSD += g.EnergyUSD - g.HostEnergyUSD - g.LeasedEnergyUSD
}

// Utilization is leased over offered GPU-hours (0 with none offered).
func (u Usage) Utilization() float64 {
	if u.OfferedGPUHours <= 0 {
		return 0
	}
	return u.LeasedGPUHours / u.OfferedGPUHours
}

// Rates are a GPU's costs per offered GPU-hour: Fixed whatever it does,
// Idle and Busy for its own energy when idle or leased.
type Rates struct {
	FixedUSDHour, IdleUSDHour, BusyUSDHour float64
	// BusyMeasured is false when nothing was leased: BusyUSDHour is then
	// the idle rate, and a break-even floor is a lower bound.
	BusyMeasured bool
	FeeShare     float64
}

// Rates turns measured usage into hourly rates, with feeShare (0..1) of
// revenue lost to fees.
func (u Usage) Rates(feeShare float64) Rates {
	r := Rates{FeeShare: feeShare}
	if u.OfferedGPUHours <= 0 {
		return r
	}
	r.FixedUSDHour = (u.FixedUSD + u.HostEnergyUSD) / u.OfferedGPUHours
	if idle := u.OfferedGPUHours - u.LeasedGPUHours; idle > 0 {
		r.IdleUSDHour = u.IdleEnergyUSD / idle
	}
	r.BusyUSDHour, r.BusyMeasured = r.IdleUSDHour, false
	if u.LeasedGPUHours > 0 {
		r.BusyUSDHour, r.BusyMeasured = u.LeasedEnergyUSD/u.LeasedGPUHours, true
	}
	return r
}

// BreakEven is the price per leased GPU-hour at which a GPU leased a
// share util (0..1] of its offered hours pays all its costs: per offered
// hour it earns p·util·(1-fees) and costs Fixed + (1-util)·Idle +
// util·Busy. It is +Inf at util 0.
func (r Rates) BreakEven(util float64) float64 {
	if util <= 0 || r.FeeShare >= 1 {
		return math.Inf(1)
	}
	return (r.FixedUSDHour + (1-util)*r.IdleUSDHour + util*r.BusyUSDHour) / (util * (1 - r.FeeShare))
}

// Index is the network's cleared prices of one model and tier, USD per
// GPU-hour (zero Awards: no index).
type Index struct {
	Awards           int
	P10, Median, P90 float64
}

// Verdict says where a floor sits against the break-even floors and the
// index; the advice, never a change.
func Verdict(floor, breakEvenMeasured, breakEvenTarget float64, ix Index) string {
	switch {
	case floor > 0 && floor < breakEvenTarget:
		return "floor below break-even at the target utilization: leases lose money"
	case floor > 0 && floor < breakEvenMeasured:
		return "floor below break-even at the measured utilization: raise it or fill more hours"
	case ix.Awards > 0 && breakEvenTarget > ix.P90:
		return "the market's p90 is below break-even at the target: this model does not pay here"
	case ix.Awards > 0 && floor > ix.P90:
		return "floor above the market's p90: few awards expected"
	case ix.Awards > 0 && floor < ix.P10:
		return "floor below the market's p10: room to raise it"
	case ix.Awards == 0:
		return "no cleared prices for this model and tier yet"
	}
	return "floor covers costs and sits inside the market's range"
}
