package renter

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/node/words"
	"github.com/idlegrid/idlegrid/store"
)

// batchReplicas is how many independent runs a job spec asks for: its
// `replicas` for a batch job, 1 for a service (whose replicas serve
// behind one endpoint and are not compared).
func batchReplicas(spec *auction.JobSpec) int {
	if spec == nil || spec.Kind == auction.KindService {
		return 1
	}
	return spec.ReplicaCount()
}

// replicaAward is what one auction of a batch job awards: the replicas
// numbered in replicas (1-based) of the job's total, each on a host
// independent (under the spec's rules) of the others and of besides. A
// job's first auction awards every replica; a replica lost to its
// provider is auctioned again alone, besides holding the hosts of the
// replicas kept and of the one lost. A job without replicas has a total
// of 1.
type replicaAward struct {
	replicas []int
	total    int
	rules    auction.ReplicaRules
	besides  []auction.ReplicaHost
}

// wholeJob is the award of a job's first auction: all its replicas.
func wholeJob(spec *auction.JobSpec) replicaAward {
	n := batchReplicas(spec)
	want := replicaAward{total: n, rules: spec.ReplicaRules()}
	for k := range n {
		want.replicas = append(want.replicas, k+1)
	}
	return want
}

// replicaOf is the replica an award runs: its number and its host, by
// provider (recorded on its lease).
type replicaOf struct {
	number int
	host   func(provider string) auction.ReplicaHost
}

// replicaHostOf is the host a replica's lease runs on, as the award
// recorded it.
func replicaHostOf(l *store.Lease) auction.ReplicaHost {
	return auction.ReplicaHost{Peer: l.Provider, Fingerprint: l.HostFingerprint, Region: l.HostRegion}
}

// awardReplicas leases the replicas want names, each on one host
// independent of the others and of want.besides (auction.ReplicaConflict:
// another peer ID and another hardware fingerprint, and under distinct
// regions another country). It first places them all on the matcher's
// ranking (auction.PlaceReplicas) and awards nothing when too few
// independent hosts bid, so a short job ends unfilled saying why instead
// of running fewer replicas than asked. Each replica is then awarded in
// turn over the bids of the hosts still independent, the award passing on
// when a winner declines; a replica that finds no taker after that is
// recorded unfilled in the job's history, and the job runs the others.
// Each lease records its replica number and host (offerAward).
func (ar *awarder) awardReplicas(ctx context.Context, pa *pendingAuction, bids []*auction.Bid, bidIDs []string, unbacked map[string]string, records map[string]*auction.Capacity, want replicaAward) (leases []*store.Lease, unfilled string) {
	jobID := pa.jobID
	regions := map[string]string{} // a bidder's country, as its bid names it
	for _, b := range bids {
		regions[b.Provider] = b.Region
	}
	host := func(provider string) auction.ReplicaHost {
		h := auction.ReplicaHost{Peer: provider, Region: regions[provider]}
		if rec := records[provider]; rec != nil {
			h.Fingerprint = rec.FingerprintID
		}
		return h
	}
	gpus := pa.rfq.Resources.GPUs
	whole, pools := auction.ReplicaBids(bids, gpus, want.rules, want.besides, host)
	if why := ar.placeable(pa, pick(bids, whole), unbacked, host, want); why != "" {
		return nil, why + refusedSummary(pools)
	}
	chosen := slices.Clone(want.besides)
	excluded := map[string]bool{} // declined one replica's award: not offered the next
	for _, k := range want.replicas {
		kept, _ := auction.ReplicaBids(bids, gpus, want.rules, chosen, host)
		ls, why := ar.awardPlan(ctx, pa, pick(bids, kept), pick(bidIDs, kept), unbacked, &replicaOf{number: k, host: host}, excluded)
		if len(ls) == 0 && len(want.besides) > 0 {
			// A lost replica: its re-auction is retried (replaceReplica).
			return nil, fmt.Sprintf("replica %d of %d: %s", k, want.total, why)
		}
		if len(ls) == 0 {
			ar.jobs.event(jobID, "replica-unfilled", "replica %d of %d unfilled: %s; the job runs %s", k, want.total, why, words.Plural(len(leases), "replica"))
			continue
		}
		h := host(ls[0].Provider)
		chosen = append(chosen, h)
		leases = append(leases, ls...)
		how := "hardware fingerprint " + lease.Short(h.Fingerprint)
		if h.Fingerprint == "" {
			how = "no hardware fingerprint (a CPU-only host): told apart from the others by its key alone"
		}
		if want.rules.DistinctRegions {
			how += ", in region " + h.Region
		}
		ar.jobs.event(jobID, "replica", "replica %d of %d: lease %s on provider %s, %s", k, want.total, lease.Short(ls[0].ID), lease.Short(ls[0].Provider), how)
	}
	if len(leases) == 0 {
		return nil, fmt.Sprintf("no replica of %d could be leased", len(want.replicas))
	}
	return leases, ""
}

// placeable checks that want's replicas can be placed on independent
// hosts among bids (each able to hold the job alone), on the matcher's
// ranking: its winner, then its backups. It returns why not, in words; ""
// when they can.
func (ar *awarder) placeable(pa *pendingAuction, bids []*auction.Bid, unbacked map[string]string, host func(string) auction.ReplicaHost, want replicaAward) string {
	in := ar.matchInput(pa.rfq, pa.rfqID, bids)
	in.Unbacked = unbacked
	in.ReserveMicro = ar.reserves(pa.rfq)
	in.Weights.RankPools = false
	plan := auction.Match(in)
	var ranked []auction.ReplicaHost
	for _, a := range plan.Allocations {
		ranked = append(ranked, host(a.Provider))
	}
	for _, i := range plan.Backups {
		ranked = append(ranked, host(bids[i].Provider))
	}
	n := len(want.replicas)
	picked, passed := auction.PlaceReplicas(n, want.rules, want.besides, ranked)
	if len(picked) == n {
		return ""
	}
	distinct := "distinct keys and hardware fingerprints"
	if want.rules.DistinctRegions {
		distinct = "distinct keys, hardware fingerprints and regions (replica_regions: distinct)"
	}
	why := fmt.Sprintf("replicas: %d needs %d independent providers (%s) and only %d bid within the job's limits",
		n, n, distinct, len(picked))
	if len(want.besides) > 0 {
		why = fmt.Sprintf("replica %d of %d needs a provider independent of the other replicas' and of the lost one's (%s) and none bid within the job's limits",
			want.replicas[0], want.total, distinct)
	}
	if want.rules.DistinctRegions {
		if in := auction.Regions(ranked); len(in) > 0 {
			countries := "1 country"
			if len(in) > 1 {
				countries = fmt.Sprintf("%d countries", len(in))
			}
			why += fmt.Sprintf("; the bids able to run it came from %s: %s", countries, strings.Join(in, ", "))
		}
	}
	if len(passed) > 0 {
		why += "; passed over: " + strings.Join(passed, "; ")
	}
	if plan.Unfilled != "" && len(picked) == 0 {
		why += "; " + plan.Unfilled
	}
	// Bids outranked by the placed replicas' are no reason the rest failed.
	plan.Losers = slices.DeleteFunc(plan.Losers, func(r auction.Rejection) bool { return r.Code == auction.RejectOutranked })
	return why + lossSummary(plan)
}

// pick returns the elements of s at the indexes idx.
func pick[T any](s []T, idx []int) []T {
	out := make([]T, 0, len(idx))
	for _, i := range idx {
		out = append(out, s[i])
	}
	return out
}

// refusedSummary lists the bids refused for a replica, by provider.
func refusedSummary(refused map[string]string) string {
	if len(refused) == 0 {
		return ""
	}
	parts := make([]string, 0, len(refused))
	for p, why := range refused {
		parts = append(parts, lease.Short(p)+": "+why)
	}
	slices.Sort(parts)
	return "; bids refused for replicas: " + strings.Join(parts, ", ")
}
