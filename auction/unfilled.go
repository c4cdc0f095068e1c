package auction

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// ExplainNoBids says, in the renter's terms, why an auction for r got no
// bid, from the renter's market view: the providers' capacity records and
// the renter's reliability score of each. It filters the view the way a
// provider's bidder and the matcher would (model and memory, runtime,
// region, reliability, free GPUs, price floor) and names the first filter
// that leaves nobody, with the counts before it. When every filter passes
// somebody, the providers could have bid and did not (busy with other
// auctions, or their bids came late).
func ExplainNoBids(r *RFQ, offers []*Capacity, reliability func(peer string) float64) string {
	if len(offers) == 0 {
		return "no provider in this renter's market view yet (is the node connected? see idlegrid status)"
	}
	cpuOnly := r.Resources.GPUs == 0
	left := offers
	what := "that GPU"
	if cpuOnly {
		what = "a CPU share"
		left = filterOffers(left, func(c *Capacity) bool { return c.CPU != nil })
		if len(left) == 0 {
			return fmt.Sprintf("none of the %d providers in the market view offers a CPU share for CPU-only work", len(offers))
		}
	} else {
		if len(r.Resources.Models) > 0 {
			what = strings.Join(r.Resources.Models, " or ")
		}
		left = filterOffers(left, func(c *Capacity) bool { return len(gpusFor(r, c, false)) > 0 })
		if len(left) == 0 {
			return fmt.Sprintf("no provider offers %s%s: the market view's %d providers offer %s",
				what, vramNote(r), len(offers), offeredFamilies(offers))
		}
	}
	n := len(left)
	left = filterOffers(left, func(c *Capacity) bool { return slices.Contains(c.Runtimes, r.Runtime) })
	if len(left) == 0 {
		return fmt.Sprintf("%s %s, but none runs %s jobs", offerers(n), what, r.Runtime)
	}
	if len(r.Regions) > 0 {
		n = len(left)
		var where []string
		left = filterOffers(left, func(c *Capacity) bool {
			where = append(where, c.Region.Country)
			return slices.Contains(r.Regions, c.Region.Country)
		})
		if len(left) == 0 {
			return fmt.Sprintf("%s %s, but none in region %s (they are in %s)",
				offerers(n), what, strings.Join(r.Regions, ","), strings.Join(uniqSorted(where), ","))
		}
	}
	if r.MinReliabilityPermille > 0 {
		n = len(left)
		best := 0.0
		left = filterOffers(left, func(c *Capacity) bool {
			rel := reliability(c.Peer)
			best = max(best, rel)
			return rel*1000 >= float64(r.MinReliabilityPermille)
		})
		if len(left) == 0 {
			return fmt.Sprintf("%s %s, but none has the reliability %.3f you asked for (the best has %.3f)",
				offerers(n), what, float64(r.MinReliabilityPermille)/1000, best)
		}
	}
	n = len(left)
	var free int
	left = filterOffers(left, func(c *Capacity) bool {
		if cpuOnly {
			return c.CPU.FreeCores >= max(1, r.Resources.CPUCores)
		}
		k := len(gpusFor(r, c, true))
		free += k
		return k > 0
	})
	if len(left) == 0 {
		return fmt.Sprintf("%s %s, but all are busy (no free %s now)", offerers(n), what, strings.TrimPrefix(what, "a "))
	}
	if !cpuOnly && free < int(r.Resources.GPUs) {
		return fmt.Sprintf("%s %s, but only %d such GPUs are free and you asked for %d", offerers(n), what, free, r.Resources.GPUs)
	}
	n = len(left)
	cheapest := uint64(0)
	left = filterOffers(left, func(c *Capacity) bool {
		floor := c.Floor.For(r.Tier)
		if cpuOnly {
			floor = c.CPU.FloorMicro * uint64(max(1, r.Resources.CPUCores))
		}
		if cheapest == 0 || floor < cheapest {
			cheapest = floor
		}
		return floor <= r.MaxPriceMicro
	})
	if len(left) == 0 {
		unit := "GPU-hour"
		if cpuOnly {
			unit = "hour"
		}
		return fmt.Sprintf("%s %s free, but the cheapest asks $%.4f per %s for %s and your cap is $%.4f",
			offerers(n), what, float64(cheapest)/1e6, unit, r.Tier, float64(r.MaxPriceMicro)/1e6)
	}
	return fmt.Sprintf("%s could take it (%s, within your cap) but none bid within the %dms window: they may be busy with other auctions; retry, or allow a longer bid_window",
		providers(len(left)), what, r.BidWindowMs)
}

// gpusFor returns c's GPUs that satisfy r's model, memory and compute
// capability; with free, only the free ones not under a firm hold.
func gpusFor(r *RFQ, c *Capacity, free bool) []GPU {
	var out []GPU
	for _, g := range c.GPUs {
		if !ModelAccepted(r.Resources.Models, g.Model) || g.VRAMMiB < r.Resources.MinVRAMMiB {
			continue
		}
		if r.Resources.MinComputeCap != "" && !ccAtLeast(g.ComputeCap, r.Resources.MinComputeCap) {
			continue
		}
		if free && (!g.Free || g.Held) {
			continue
		}
		out = append(out, g)
	}
	return out
}

func filterOffers(in []*Capacity, keep func(*Capacity) bool) []*Capacity {
	var out []*Capacity
	for _, c := range in {
		if keep(c) {
			out = append(out, c)
		}
	}
	return out
}

func vramNote(r *RFQ) string {
	if r.Resources.MinVRAMMiB == 0 {
		return ""
	}
	return fmt.Sprintf(" with %d GiB or more", (r.Resources.MinVRAMMiB+1023)/1024)
}

// offeredFamilies lists the GPU families in offers with how many providers
// offer each, most offered first: "a100 (2), h100 (1)".
func offeredFamilies(offers []*Capacity) string {
	count := map[string]int{}
	for _, c := range offers {
		seen := map[string]bool{}
		for _, g := range c.GPUs {
			if f := GPUFamily(g.Model); !seen[f] {
				seen[f] = true
				count[f]++
			}
		}
	}
	if len(count) == 0 {
		return "no GPUs"
	}
	fams := slices.SortedFunc(maps.Keys(count), func(a, b string) int {
		return cmp.Or(cmp.Compare(count[b], count[a]), cmp.Compare(a, b))
	})
	parts := make([]string, len(fams))
	for i, f := range fams {
		parts[i] = fmt.Sprintf("%s (%d)", f, count[f])
	}
	return strings.Join(parts, ", ")
}

func providers(n int) string {
	if n == 1 {
		return "1 provider"
	}
	return fmt.Sprintf("%d providers", n)
}

// offerers is "1 provider offers" or "N providers offer".
func offerers(n int) string {
	if n == 1 {
		return "1 provider offers"
	}
	return providers(n) + " offer"
}

func uniqSorted(xs []string) []string {
	slices.Sort(xs)
	return slices.Compact(xs)
}
