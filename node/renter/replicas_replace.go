package renter

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// replaceReplica auctions a replica of a replicated batch job that its
// provider lost (preempted, or failed unreachable or unhealthy) again,
// alone, while the other replicas run on or stay done: under its number,
// on a host independent of every other replica's and of the lost one's
// (distinct keys and hardware fingerprints, and countries when the spec
// asks). round counts the job's re-auctions, at most maxReauctions; each
// waits for a plan as a re-auction does (market.max_wait, at least
// ReauctionMinWait), its tries spaced here. A replica not replaced is
// recorded unfilled and the job runs the others (next nil). jobEnded
// reports that ctx ended or an auction ended the job.
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
	if *round++; *round >= maxReauctions {
		d.jobs.event(jobID, "replica-unfilled", "replica %d of %d not replaced: the job was re-auctioned %d times; the job runs the others", number, total, maxReauctions-1)
		return nil, false
	}
	// The replacement never ends the job: its tries are paced here, and
	// when its wait is over the job runs the replicas it has.
	limit := max(d.maxWait, ReauctionMinWait)
	w := newPacedWait(d.now(), fmt.Sprintf("replica %d's replacement waits %s", number, limit))
	for {
		leases := d.auction(ctx, jobID, spec, *round, want, w)
		if len(leases) > 0 {
			for _, extra := range leases[1:] {
				d.cancelLease(context.WithoutCancel(ctx), extra, "one lease per replica")
			}
			return leases[0], false
		}
		if ctx.Err() != nil || d.jobEnded(jobID) {
			return nil, true
		}
		waited := d.now().Sub(w.since)
		next := waitBackoff(waited)
		if waited+next >= limit {
			d.jobs.event(jobID, "replica-unfilled", "replica %d of %d not replaced: no plan in %d auctions over %s; the job runs the others",
				number, total, w.tries+1, waited.Round(time.Second))
			return nil, false
		}
		if !sleepCtx(ctx, next) {
			return nil, true
		}
		w.tries++
	}
}

// jobEnded reports whether the job reached a terminal state (an auction
// that could not build or publish its RFQ fails it).
func (d *jobDriver) jobEnded(jobID string) bool {
	j, err := d.db.GetJob(jobID)
	return err != nil || lease.JobState(j.State).Terminal()
}
