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

// awardReplicas leases n replicas of a batch job, each on one host
// independent of the others (auction.ReplicaConflict: another peer ID and
// another hardware fingerprint). It first places all n on the matcher's
// ranking (auction.PlaceReplicas) and awards nothing when fewer than n
// independent hosts bid, so a short job ends unfilled saying why instead
// of running fewer replicas than asked. Each replica is then awarded in
// turn over the bids of the hosts still independent, the award passing
// on when a winner declines; a replica that finds no taker after that is
// recorded unfilled in the job's history, and the job runs the others.
func (ar *awarder) awardReplicas(ctx context.Context, pa *pendingAuction, bids []*auction.Bid, bidIDs []string, unbacked map[string]string, records map[string]*auction.Capacity, n int) (leases []*store.Lease, unfilled string) {
	jobID := pa.jobID
	host := func(provider string) auction.ReplicaHost {
		h := auction.ReplicaHost{Peer: provider}
		if rec := records[provider]; rec != nil {
			h.Fingerprint = rec.FingerprintID
		}
		return h
	}
	gpus := pa.rfq.Resources.GPUs
	whole, pools := auction.ReplicaBids(bids, gpus, nil, host)
	if why := ar.placeable(pa, pick(bids, whole), unbacked, host, n); why != "" {
		return nil, why + refusedSummary(pools)
	}
	var chosen []auction.ReplicaHost
	excluded := map[string]bool{} // declined one replica's award: not offered the next
	for k := 1; k <= n; k++ {
		kept, _ := auction.ReplicaBids(bids, gpus, chosen, host)
		ls, why := ar.awardPlan(ctx, pa, pick(bids, kept), pick(bidIDs, kept), unbacked, true, excluded)
		if len(ls) == 0 {
			ar.jobs.event(jobID, "replica-unfilled", "replica %d of %d unfilled: %s; the job runs %s", k, n, why, words.Plural(len(leases), "replica"))
			continue
		}
		l := ls[0]
		h := host(l.Provider)
		chosen = append(chosen, h)
		leases = append(leases, ls...)
		how := "hardware fingerprint " + lease.Short(h.Fingerprint)
		if h.Fingerprint == "" {
			how = "no hardware fingerprint (a CPU-only host): told apart from the others by its key alone"
		}
		ar.jobs.event(jobID, "replica", "replica %d of %d: lease %s on provider %s, %s", k, n, lease.Short(l.ID), lease.Short(l.Provider), how)
	}
	if len(leases) == 0 {
		return nil, fmt.Sprintf("no replica of %d could be leased", n)
	}
	return leases, ""
}

// placeable checks that n replicas can be placed on independent hosts
// among bids (each able to hold the job alone), on the matcher's ranking:
// its winner, then its backups. It returns why not, in words; "" when
// they can.
func (ar *awarder) placeable(pa *pendingAuction, bids []*auction.Bid, unbacked map[string]string, host func(string) auction.ReplicaHost, n int) string {
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
	picked, passed := auction.PlaceReplicas(n, ranked)
	if len(picked) == n {
		return ""
	}
	why := fmt.Sprintf("replicas: %d needs %d independent providers (distinct keys and hardware fingerprints) and only %d bid within the job's limits",
		n, n, len(picked))
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
