package provider

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// handleAward answers a sealed award over lease.LeaseProto with a tagged
// acceptance or decline. Retries of an accepted award get the same
// acceptance back.
func (b *bidder) handleAward(ctx context.Context, from peer.ID, req []byte) ([]byte, error) {
	aw, signer, err := auction.OpenAward(req)
	if err != nil {
		return nil, lease.Malformed(err)
	}
	if signer != from {
		return nil, lease.Malformed(fmt.Errorf("award signed by %s but sent by %s", signer, from))
	}
	if aw.Provider != b.self {
		return nil, errors.New("award names another provider")
	}
	awardID := attest.RecordID(req).String()
	if l, err := b.db.GetLease(awardID); err == nil {
		return append([]byte{lease.TagAccept}, l.Acceptance...), nil
	}
	if aw.Expired(b.now()) {
		return b.decline(awardID, "award expired")
	}
	if b.admit != nil {
		if err := b.admit(aw); err != nil {
			return b.decline(awardID, err.Error())
		}
	}
	// The inventory is read before the bidder's lock: the advertiser reads
	// firm holds, and they are changed under that lock.
	var inventory []auction.GPU
	if b.capacity != nil {
		if capacity, err := b.capacity(1); err == nil {
			inventory = capacity.GPUs
		}
	}
	l, preempt, reason := b.commit(aw, awardID, req, inventory)
	if reason != "" {
		return b.decline(awardID, reason)
	}
	for _, p := range preempt {
		b.sendPreempt(p, time.UnixMilli(l.StartsAtMs))
	}
	b.start(l)
	return append([]byte{lease.TagAccept}, l.Acceptance...), nil
}

// commit re-checks an award against the bid it names and places it on
// GPUs free now (placeAward), and if that succeeds, countersigns and
// stores the lease, naming the GPUs committed, before anything runs.
func (b *bidder) commit(aw *auction.Award, awardID string, raw []byte, inventory []auction.GPU) (l *store.Lease, preempt []preemption, reason string) {
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	// The renter's standing is checked under the bidder's lock, so two
	// awards of one renter cannot both pass its bound.
	paid := b.firm.hasPaid(aw.Renter)
	if why := b.takeUps.admit(aw.Renter, len(aw.GPUs), len(inventory), paid); why != "" {
		return nil, nil, why
	}
	l, preempt, reason = b.commitBid(aw, awardID, raw, inventory, now)
	if reason == "" {
		b.takeUps.awarded(awardID, aw.Renter, len(l.GPUs), paid)
	}
	return l, preempt, reason
}

// commitBid is commit's work under the bidder's lock.
func (b *bidder) commitBid(aw *auction.Award, awardID string, raw []byte, inventory []auction.GPU, now time.Time) (*store.Lease, []preemption, string) {
	sb, ok := b.bids[aw.Bid]
	if !ok {
		return nil, nil, "unknown or expired bid"
	}
	if sb.bid.RFQ != aw.RFQ || sb.rfq.Renter != aw.Renter || sb.rfq.Tier != aw.Tier || sb.bid.JobCID != aw.JobCID {
		return nil, nil, "award does not match the bid"
	}
	if aw.MaxDurationSec == 0 || aw.MaxDurationSec > sb.rfq.MaxDurationSec {
		return nil, nil, fmt.Sprintf("award asks %ds, the RFQ allowed %ds", aw.MaxDurationSec, sb.rfq.MaxDurationSec)
	}
	if aw.NoticeSec != sb.bid.NoticeSec {
		return nil, nil, "award changes the promised preemption notice"
	}
	if aw.LeaseTerms() != sb.bid.LeaseTerms() {
		return nil, nil, "award changes the lease terms of the bid"
	}
	if aw.PriceMicro < sb.bid.PriceMicro {
		return nil, nil, fmt.Sprintf("price %d below the bid %d", aw.PriceMicro, sb.bid.PriceMicro)
	}
	if sb.rfq.Resources.GPUs == 0 {
		return b.commitCPU(aw, awardID, raw, sb, now) // cpu_commit.go
	}
	if len(aw.GPUs) == 0 {
		return nil, nil, "award names no GPUs"
	}
	pl, reason := b.placeAward(aw, sb, inventory, now)
	if reason != "" {
		return nil, nil, reason
	}
	start, preempt := pl.start, pl.preempt
	acc := &auction.LeaseAcceptance{
		V: auction.MessagesVersion, Provider: b.self, Award: awardID, GPUs: pl.gpus,
		AcceptedMs: now.UnixMilli(), StartsAtMs: start.UnixMilli(),
	}
	accRaw, err := auction.SealLeaseAcceptance(acc, b.key)
	if err != nil {
		return nil, nil, "internal: " + err.Error()
	}
	l := &store.Lease{
		ID: awardID, Side: "provider", Award: raw, Acceptance: accRaw, JobCID: aw.JobCID,
		Renter: aw.Renter, Provider: aw.Provider, GPUs: pl.gpus, PriceMicro: aw.PriceMicro, Model: sb.bid.Model,
		Tier: string(aw.Tier), NoticeSec: aw.NoticeSec, ExpectedSec: sb.rfq.ExpectedDurationSec,
		Runtime: sb.rfq.Runtime, State: lease.Awarded,
		StartsAtMs: start.UnixMilli(), EndsAtMs: start.Add(time.Duration(aw.MaxDurationSec) * time.Second).UnixMilli(),
	}
	// Durable before the acceptance leaves this node: a lease both sides
	// signed must survive a crash.
	if err := b.leases.Put(l); err != nil {
		return nil, nil, "internal: " + err.Error()
	}
	for _, g := range pl.gpus {
		b.committed[g] = commitment{leaseID: awardID, tier: aw.Tier, renter: aw.Renter, noticeSec: aw.NoticeSec}
		b.firm.take(g)
	}
	// Firm holds on the rest of the bid's GPUs stay until they end:
	// another part of the renter's micro-pool may still come.
	return l, preempt, ""
}

func (b *bidder) decline(awardID, reason string) ([]byte, error) {
	d := &auction.Decline{V: auction.MessagesVersion, Provider: b.self, Award: awardID, Reason: reason, AtMs: b.now().UnixMilli()}
	raw, err := auction.SealDecline(d, b.key)
	if err != nil {
		return nil, err
	}
	b.log.Info("award declined", "award", lease.Short(awardID), "reason", reason)
	return append([]byte{lease.TagDecline}, raw...), nil
}
