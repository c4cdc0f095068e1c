package auction

import (
	"slices"
)

// CouldBid is a coarse, optimistic check of whether a provider with
// capacity c could bid on r at all: runtime, tier, region, and at least
// one free GPU of an accepted model with enough memory. A renter uses it
// to know which providers to wait for before closing a bid window early;
// the provider's own bidder makes the real decision.
func CouldBid(r *RFQ, c *Capacity) bool {
	if !slices.Contains(c.Runtimes, r.Runtime) || !c.Accepts(r.Tier) {
		return false
	}
	if len(r.Regions) > 0 && !slices.Contains(r.Regions, c.Region.Country) {
		return false
	}
	if r.Resources.GPUs == 0 {
		return cpuFits(r.Resources, c.CPU) == "" // CPU-only: the CPU share
	}
	for _, g := range c.GPUs {
		if !g.Free || g.VRAMMiB < r.Resources.MinVRAMMiB {
			continue
		}
		if ModelAccepted(r.Resources.Models, g.Model) {
			if r.Resources.MinComputeCap == "" || ccAtLeast(g.ComputeCap, r.Resources.MinComputeCap) {
				return true
			}
		}
	}
	return false
}

func ccAtLeast(have, want string) bool {
	hm, hn, err1 := ParseComputeCap(have)
	wm, wn, err2 := ParseComputeCap(want)
	if err1 != nil || err2 != nil {
		return false
	}
	return hm > wm || hm == wm && hn >= wn
}
