package provider

import (
	"fmt"
	"slices"
	"time"

	"github.com/idlegrid/idlegrid/auction"
)

// placement is where an award lands: the GPUs committed to it, in the
// award's order, and the bronze leases to preempt for them.
type placement struct {
	gpus    []string
	preempt []preemption
	// start is when the work may start: now, or after the notice owed to
	// the bronze leases preempted.
	start time.Time
}

// placeAward re-checks an award's GPUs against the commitments and firm
// holds of now. A bid holds nothing, so a GPU it named may be gone by the
// award: each such GPU is replaced by a free GPU of the bid's model (the
// bid's other GPUs first, then the rest of the inventory by index), and
// the acceptance names the GPUs actually committed. The award is declined
// with the first missing GPU's reason when too few are left. A bronze
// lease on a named GPU is preempted for gold or silver work, as promised
// in the bid; substitutes are only free GPUs. inventory is the offered
// GPUs (nil: unknown, no substitutes). Callers hold b.mu.
func (b *bidder) placeAward(aw *auction.Award, sb sentBid, inventory []auction.GPU, now time.Time) (placement, string) {
	pl := placement{start: now}
	offered := map[string]bool{}
	for _, g := range inventory {
		offered[g.UUID] = true
	}
	heldByOther := func(g string) bool {
		h := b.firm.heldBy(g, now)
		return h != "" && h != aw.Bid
	}
	chosen := map[string]bool{}
	missing := 0
	reason := ""
	seen := map[string]bool{}
	for _, g := range aw.GPUs {
		if !slices.Contains(sb.bid.GPUs, g) {
			return placement{}, fmt.Sprintf("GPU %s was not in the bid", g)
		}
		if chosen[g] {
			return placement{}, fmt.Sprintf("GPU %s is named twice", g)
		}
		c, committed := b.committed[g]
		why := ""
		switch {
		case inventory != nil && !offered[g]:
			why = fmt.Sprintf("GPU %s is no longer offered", g)
		case heldByOther(g):
			why = fmt.Sprintf("GPU %s is held by another bid", g)
		case !committed:
		case c.tier == auction.TierBronze && aw.Tier != auction.TierBronze:
			if !seen[c.leaseID] {
				seen[c.leaseID] = true
				pl.preempt = append(pl.preempt, preemption{leaseID: c.leaseID, renter: c.renter, noticeSec: c.noticeSec})
			}
			if s := now.Add(time.Duration(c.noticeSec) * time.Second); s.After(pl.start) {
				pl.start = s
			}
		default:
			why = fmt.Sprintf("GPU %s is already leased", g)
		}
		chosen[g] = why == ""
		if why != "" {
			missing++
			if reason == "" {
				reason = why
			}
		}
		pl.gpus = append(pl.gpus, g)
	}
	if missing == 0 {
		return pl, ""
	}
	subs := b.substitutes(sb, inventory, chosen, heldByOther, missing)
	if len(subs) < missing {
		return placement{}, reason
	}
	for i, g := range pl.gpus {
		if !chosen[g] {
			pl.gpus[i], subs = subs[0], subs[1:]
		}
	}
	return pl, ""
}

// substitutes lists up to n free GPUs of the bid's model that the award
// does not use: the bid's own first, then the inventory's by index.
func (b *bidder) substitutes(sb sentBid, inventory []auction.GPU, used map[string]bool, heldByOther func(string) bool, n int) []string {
	model := map[string]string{}
	for _, g := range inventory {
		model[g.UUID] = g.Model
	}
	order := slices.Clone(sb.bid.GPUs)
	byIndex := slices.Clone(inventory)
	slices.SortFunc(byIndex, func(x, y auction.GPU) int { return int(x.Index) - int(y.Index) })
	for _, g := range byIndex {
		order = append(order, g.UUID)
	}
	var out []string
	taken := map[string]bool{}
	for _, g := range order {
		if len(out) == n {
			break
		}
		if _, named := used[g]; named || taken[g] || model[g] != sb.bid.Model {
			continue
		}
		if _, committed := b.committed[g]; committed || heldByOther(g) {
			continue
		}
		taken[g] = true
		out = append(out, g)
	}
	return out
}
