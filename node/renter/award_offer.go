package renter

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// awardValidity is how long a provider has to countersign an award.
const awardValidity = 10 * time.Second

// inflightAward is an award sent and not yet countersigned: its provider
// may already ask for the spec before the renter stored the lease.
type inflightAward struct {
	provider string
	jobID    string // the renter's job
}

// inflightAwards are the awards sent and not yet countersigned, by award
// ID: the awarder adds them, the job server reads them.
type inflightAwards struct {
	mu sync.Mutex
	m  map[string]inflightAward
}

func newInflightAwards() *inflightAwards {
	return &inflightAwards{m: map[string]inflightAward{}}
}

func (f *inflightAwards) add(awardID string, in inflightAward) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.m[awardID] = in
}

func (f *inflightAwards) remove(awardID string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.m, awardID)
}

func (f *inflightAwards) get(awardID string) (inflightAward, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	in, ok := f.m[awardID]
	return in, ok
}

// offerAward sends one signed award and waits for the countersignature;
// the lease it stores records the replica it runs, if any. It returns
// the award's job event, dated when the award went out, for the caller
// to store with what came of it: each job event rewrites the job record
// durably, and the award's path must not wait on that (at 200 nodes on
// two cores that write held awards up by 0.3-2 s).
func (ar *awarder) offerAward(ctx context.Context, jobID string, rfq *auction.RFQ, rfqID string, bid *auction.Bid, bidID string, alloc auction.Allocation, part, parts uint32, replica *replicaOf) (l *store.Lease, offered store.JobEvent, err error) {
	nonce := make([]byte, 16)
	if _, err := rand.Read(nonce); err != nil {
		return nil, offered, err
	}
	now := ar.now()
	aw := &auction.Award{
		V: auction.MessagesVersion, Renter: ar.self.String(), Provider: bid.Provider,
		RFQ: rfqID, Bid: bidID, JobCID: rfq.JobCID, GPUs: alloc.GPUs, PriceMicro: alloc.PriceMicro,
		Tier: rfq.Tier, MaxDurationSec: rfq.MaxDurationSec, NoticeSec: bid.NoticeSec,
		Part: part, Parts: parts, Nonce: nonce,
		IssuedAtMs: now.UnixMilli(), ExpiresAtMs: now.Add(awardValidity).UnixMilli(),
	}
	// The renter accepts the bid's terms exactly (the matcher checked
	// them against this renter's limits); both sides run the lease by them.
	aw.SetTerms(bid.LeaseTerms())
	raw, err := auction.SealAward(aw, ar.key)
	if err != nil {
		return nil, offered, fmt.Errorf("seal award: %w", err)
	}
	awardID := attest.RecordID(raw).String()
	provider, err := peer.Decode(bid.Provider)
	if err != nil {
		return nil, offered, err
	}
	// The provider may ask for the job spec as soon as it countersigned,
	// before the lease below is stored.
	ar.inflight.add(awardID, inflightAward{provider: bid.Provider, jobID: jobID})
	defer ar.inflight.remove(awardID)
	sentAt := ar.now().UnixMilli()
	resp, err := ar.p2p.Request(ctx, provider, lease.LeaseProto, raw, lease.LeaseLimits)
	// The award event's time splits the wait for a lease: the checks and
	// matching before it, the winner's answer after.
	offered = store.JobEvent{AtMs: sentAt, Kind: "award",
		Message: fmt.Sprintf("award %s offered to %s", lease.Short(awardID), lease.Short(bid.Provider))}
	if err != nil {
		return nil, offered, fmt.Errorf("award: %w", err)
	}
	if len(resp) < 2 {
		return nil, offered, errors.New("award: empty response")
	}
	switch resp[0] {
	case lease.TagDecline:
		d, signer, err := auction.OpenDecline(resp[1:])
		if err != nil || signer != provider || d.Award != awardID {
			return nil, offered, fmt.Errorf("award: malformed decline: %v", err)
		}
		return nil, offered, fmt.Errorf("declined: %s", d.Reason)
	case lease.TagAccept:
	default:
		return nil, offered, fmt.Errorf("award: unknown response tag %q", resp[0])
	}
	acc, signer, err := auction.OpenLeaseAcceptance(resp[1:])
	if err != nil {
		return nil, offered, fmt.Errorf("award: acceptance: %w", err)
	}
	if signer != provider || acc.Award != awardID || !sameSizedSet(acc.GPUs, aw.GPUs) {
		return nil, offered, errors.New("award: acceptance does not match the award")
	}
	// A bid holds nothing, so the provider may have committed other GPUs
	// of the bid's model than the award named (ones taken meanwhile are
	// substituted); the lease runs on the GPUs it accepted with.
	// The provider says when the work starts (after any preemption notice
	// it owes); both sides then agree on the lease's state.
	start := time.UnixMilli(acc.StartsAtMs)
	l = &store.Lease{
		ID: awardID, Side: "renter", Award: raw, Acceptance: resp[1:], JobCID: rfq.JobCID, JobID: jobID,
		Renter: aw.Renter, Provider: aw.Provider, GPUs: acc.GPUs, PriceMicro: aw.PriceMicro, Model: bid.Model,
		Tier: string(aw.Tier), NoticeSec: aw.NoticeSec, ExpectedSec: rfq.ExpectedDurationSec, Runtime: rfq.Runtime,
		State: lease.Awarded, StartsAtMs: start.UnixMilli(),
		EndsAtMs: start.Add(time.Duration(rfq.MaxDurationSec) * time.Second).UnixMilli(),
	}
	if rfq.Resources.GPUs == 0 {
		l.CPUCores, l.RAMMiB = auction.CPUCoresOf(rfq.Resources), rfq.Resources.RAMMiB
	}
	if replica != nil {
		h := replica.host(bid.Provider)
		l.Replica, l.HostFingerprint, l.HostRegion = replica.number, h.Fingerprint, h.Region
	}
	if err := ar.leases.Put(l); err != nil {
		return nil, offered, err
	}
	return l, offered, nil
}

// sameSizedSet reports whether an acceptance's GPUs can stand for an
// award's: as many, each named once and none empty. Which GPUs they are is
// the provider's to say (it substitutes for GPUs taken since its bid);
// the award's price and model bind it whatever their names.
func sameSizedSet(accepted, awarded []string) bool {
	if len(accepted) != len(awarded) {
		return false
	}
	seen := make(map[string]bool, len(accepted))
	for _, g := range accepted {
		if g == "" || seen[g] {
			return false
		}
		seen[g] = true
	}
	return true
}

// publishSummary gossips the cleared price for the market price index on
// the attestation topics of the shards the RFQ went to. It also tells the
// auction's losing bidders, who heard the RFQ there, that it is over, so
// they release any firm holds of their bids at once instead of when the
// holds end.
//
// The summary carries the lease (award and acceptance), so the price index
// counts it as an award both parties signed, and vouches for the auction's
// bidders (issue 23).
func (ar *awarder) publishSummary(ctx context.Context, l *store.Lease, bidders []string, shards []auction.Shard, rfqTopics []auction.ShardTopic) {
	sum, err := auction.SummaryOfLease(l.Award, l.Acceptance, l.Model, bidders, ar.now())
	if err != nil {
		ar.log.Warn("award summary", "err", err)
		return
	}
	raw, err := auction.SealAwardSummary(sum, ar.key)
	if err != nil {
		ar.log.Warn("seal award summary", "err", err)
		return
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for _, topic := range summaryTopics(summaryShards(l.Model, shards), rfqTopics) {
		if err := ar.p2p.Publish(pctx, topic, raw, 0); err != nil {
			ar.log.Warn("publish award summary", "topic", topic, "err", err)
		}
	}
}

// summaryTopics are the attestation topics of shards an award summary
// goes to: of each topic of a shard the RFQ went to, a lot's or the
// shard's own, whose providers heard it and follow that lot's topics only
// (docs/protocol.md §3.6, step 3); the shard's own for a shard the RFQ
// did not go to (the model's, for its price index).
func summaryTopics(shards []auction.Shard, rfqTopics []auction.ShardTopic) []string {
	var out []string
	for _, s := range shards {
		n := len(out)
		for _, st := range rfqTopics {
			if st.Shard == s {
				out = append(out, auction.LotTopic(s.AttestTopic(), st.Lot, st.Lots))
			}
		}
		if len(out) == n {
			out = append(out, s.AttestTopic())
		}
	}
	return out
}

// summaryShards are the shards an award summary of a lease of model goes
// to: the RFQ's shards that admit it (trust.ValidateShardAttest), and the
// model's own shard, whose price index it belongs to.
func summaryShards(model string, rfqShards []auction.Shard) []auction.Shard {
	own, ok := auction.ModelShard(model)
	if !ok {
		return nil
	}
	out := []auction.Shard{own}
	for _, s := range rfqShards {
		if s != own && (s == auction.ShardCPU) == (own == auction.ShardCPU) {
			out = append(out, s)
		}
	}
	return out
}
