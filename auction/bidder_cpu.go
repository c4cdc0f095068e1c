package auction

import (
	"fmt"
	"math"
)

// The bidder's CPU-only path: a job that asks for no GPU (gpus: 0) leases
// cores and RAM of the provider's CPU offer, never a GPU, so it runs even
// on a host whose GPUs are all leased.

// quoteCPU picks and prices a CPU-only bid: the job's cores (at least one)
// and RAM must fit the offer's free share, and the price per hour is the
// CPU floor per core-hour times the cores, times the calendar factor.
// Scarcity pricing follows GPUs and does not apply.
func quoteCPU(in QuoteInput, pol BidPolicy, cal calendarView) (Quotation, error) {
	r, c := in.RFQ, in.Capacity
	if why := cpuFits(r.Resources, c.CPU); why != "" {
		return noBid(NoBidCPU, "%s", why)
	}
	cores := CPUCoresOf(r.Resources)
	floor := c.CPU.FloorMicro * uint64(cores)
	q := Quotation{FloorMicro: floor, CalendarFactor: float64(cal.factorPermille) / 1000, UtilFactor: 1, GapFactor: 1}
	price := max(math.Round(float64(floor)*q.CalendarFactor), float64(floor))
	priceMicro := uint64(min(price, math.MaxUint64/2))
	if priceMicro > r.MaxPriceMicro {
		return noBid(NoBidPrice, "price %d uUSD/h (%d cores × floor %d × calendar %.3g) above max %d",
			priceMicro, cores, c.CPU.FloorMicro, q.CalendarFactor, r.MaxPriceMicro)
	}
	q.Bid = bidFor(in, pol, picked{model: CPUModel}, priceMicro)
	q.Bid.VRAMMiB = 0
	return q, nil
}

// cpuFits explains why a CPU-only job of res does not fit offer, or
// returns "".
func cpuFits(res Resources, offer *CPUOffer) string {
	cores := CPUCoresOf(res)
	switch {
	case offer == nil:
		return "the provider offers no CPU share"
	case cores > offer.FreeCores:
		return fmt.Sprintf("job needs %d cores, %d of %d free", cores, offer.FreeCores, offer.Cores)
	case res.RAMMiB > offer.FreeRAMMiB:
		return fmt.Sprintf("job needs %d MiB RAM, %d of %d MiB free", res.RAMMiB, offer.FreeRAMMiB, offer.RAMMiB)
	}
	return ""
}
