package renter

import (
	"context"
	"slices"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// replaceReplica auctions a replica of a replicated batch job that its
// provider lost (preempted, or failed unreachable or unhealthy) again,
// alone, while the other replicas run on or stay done: under its number,
// on a host independent of every other replica's and of the lost one's
// (distinct keys and hardware fingerprints, and countries when the spec
// asks). round counts the job's
// re-auctions, each retried with backoff; a replica not replaced within
// maxReauctions of them is recorded unfilled and the job runs the others
// (next nil). jobEnded reports that ctx ended or an auction ended the job.
func (d *jobDriver) replaceReplica(ctx context.Context, jobID string, spec *auction.JobSpec, replicas []*store.Lease, lost *store.Lease, round *int) (next *store.Lease, jobEnded bool) {
	total := batchReplicas(spec)
	number := lost.Replica
	if number == 0 { // a lease awarded before replicas were numbered
		number = slices.IndexFunc(replicas, func(l *store.Lease) bool { return l.ID == lost.ID }) + 1
	}
	want := replicaAward{replicas: []int{number}, total: total, rules: spec.ReplicaRules()}
	for _, l := range replicas { // the lost one among them
		want.besides = append(want.besides, replicaHostOf(l))
	}
	if lost.State == lease.Failed {
		d.avoid.add(jobID, lost.Provider)
	}
	d.jobs.event(jobID, "replica-lost", "replica %d of %d (lease %s on provider %s) %s: %s; auctioning it again alone while the others run",
		number, total, lease.Short(lost.ID), lease.Short(lost.Provider), lost.State, lost.Reason)
	for {
		*round++
		if *round >= maxReauctions {
			d.jobs.event(jobID, "replica-unfilled", "replica %d of %d not replaced in %d re-auctions; the job runs the others", number, total, maxReauctions-1)
			return nil, false
		}
		// Below maxReauctions an auction that finds no plan is retried
		// (auctioneer.unfilled); one that returns none without a retry
		// ended the job or ctx.
		leases, again := d.auction(ctx, jobID, spec, *round, want)
		if len(leases) > 0 {
			for _, extra := range leases[1:] {
				d.cancelLease(context.WithoutCancel(ctx), extra, "one lease per replica")
			}
			return leases[0], false
		}
		if !again {
			return nil, true
		}
	}
}
