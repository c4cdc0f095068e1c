package provider

import (
	"time"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// commitCPU is commit for CPU-only work (the RFQ asked for no GPU): the
// lease holds cores and RAM of the CPU share, never a GPU, and starts now
// (nothing is preempted for it). The checks commit made before it apply.
// Callers hold b.mu.
func (b *bidder) commitCPU(aw *auction.Award, awardID string, raw []byte, sb sentBid, now time.Time) (*store.Lease, []preemption, string) {
	if len(aw.GPUs) != 0 {
		return nil, nil, "award names GPUs for CPU-only work"
	}
	res := sb.rfq.Resources
	if !b.cpu.take(awardID, res) {
		return nil, nil, "the CPU share is no longer free for this job's cores and RAM"
	}
	acc := &auction.LeaseAcceptance{
		V: auction.MessagesVersion, Provider: b.self, Award: awardID,
		AcceptedMs: now.UnixMilli(), StartsAtMs: now.UnixMilli(),
	}
	accRaw, err := auction.SealLeaseAcceptance(acc, b.key)
	if err != nil {
		b.cpu.release(awardID)
		return nil, nil, "internal: " + err.Error()
	}
	l := &store.Lease{
		ID: awardID, Side: "provider", Award: raw, Acceptance: accRaw, JobCID: aw.JobCID,
		Renter: aw.Renter, Provider: aw.Provider, PriceMicro: aw.PriceMicro, Model: sb.bid.Model,
		CPUCores: auction.CPUCoresOf(res), RAMMiB: res.RAMMiB,
		Tier: string(aw.Tier), NoticeSec: aw.NoticeSec, ExpectedSec: sb.rfq.ExpectedDurationSec,
		Runtime: sb.rfq.Runtime, State: lease.Awarded,
		StartsAtMs: now.UnixMilli(), EndsAtMs: now.Add(time.Duration(aw.MaxDurationSec) * time.Second).UnixMilli(),
	}
	// Durable before the acceptance leaves this node, as for GPU leases.
	if err := b.leases.Put(l); err != nil {
		b.cpu.release(awardID)
		return nil, nil, "internal: " + err.Error()
	}
	b.changed() // the record shows the share leased
	return l, nil, ""
}
