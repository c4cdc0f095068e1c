package renter

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// jobDriverDeps are what the job driver needs of the room: the other
// components' steps, as callbacks.
type jobDriverDeps struct {
	log   *slog.Logger
	db    *store.DB
	jobs  *jobTracker
	bg    *background
	runs  *jobRuns
	avoid *avoidList
	// auction runs a job's auction of the replicas want names until it
	// has leases or the job ended, or one try of a paced wait
	// (auctioneer.run).
	auction func(ctx context.Context, jobID string, spec *auction.JobSpec, round int, want replicaAward, paced *waitState) []*store.Lease
	// follow mirrors a lease until it ends (follower.followLease);
	// cancelLease stops one (follower.cancelLease).
	follow      func(ctx context.Context, l *store.Lease) *store.Lease
	cancelLease func(ctx context.Context, l *store.Lease, reason string)
	// pay pays a lease while it runs (payments.payLease); settle fetches
	// an ended lease's receipt (payments.fetchReceipt).
	pay    func(ctx context.Context, l *store.Lease)
	settle func(ctx context.Context, l *store.Lease)
	// preemptions delivers the job's leases whose preemption notice ran
	// out (preemptions.of).
	preemptions func(jobID string) chan string
	// submitCanary records and starts a canary run of a job, avoiding
	// the provider that ran it (submitter.canary).
	submitCanary func(origin *store.Job, avoid string) (*store.Job, error)
	// prover proves which of two disagreeing runs is wrong (canary_proof.go).
	prover *wrongResultProver
	// overturn records a completed lease unverified when its replicas
	// show its output wrong (completionVerifier.overturn).
	overturn func(l *store.Lease, reason string)
	// judgeOutputs runs a job's verifier module on two replicas' outputs
	// (outputJudge.judge).
	judgeOutputs func(ctx context.Context, jobID, module string, a, b *store.Lease) (outputVerdict, error)
	// slots are the replicated services' leases by slot; now and load
	// (endpoints.load: requests in flight at the job's endpoint and its
	// replicas) drive their scaling (service_replicas.go, service_scale.go).
	slots *replicaSlots
	now   func() time.Time
	load  func(jobID string) (inFlight, replicas int, ok bool)
	// cost is a service's $ per million tokens so far (endpoints.cost).
	cost func(jobID string) (usdPerMTok float64, ok bool)
}

// jobDriver carries a job from its auction to its end: it follows the
// leases an auction won, pays for them, and re-auctions the work when a
// lease is preempted or its provider becomes unreachable or unhealthy.
type jobDriver struct {
	jobDriverDeps
	reauction bool // Config.Reauction
	// maxWait is Config.MaxWait: how long a lost replica's replacement
	// waits for a plan (at least ReauctionMinWait).
	maxWait    time.Duration
	canaryRate float64 // Config.CanaryRate
	// deterministic counts the deterministic jobs completed (canary.go).
	deterministic atomic.Uint64
}

// start runs a new job's auction and the following of its leases in the
// background, cancellable by the job's ID.
func (d *jobDriver) start(jobID string, spec *auction.JobSpec) error {
	return d.bg.Go(func(ctx context.Context) {
		d.runs.run(ctx, jobID, func(ctx context.Context) { d.drive(ctx, jobID, spec, 0, nil) })
	})
}

// drive runs the job's auctions (from round, or first follows leases it
// already holds) until the job ends: work to re-auction runs the next
// round.
func (d *jobDriver) drive(ctx context.Context, jobID string, spec *auction.JobSpec, round int, leases []*store.Lease) {
	if isReplicatedService(spec) {
		d.driveReplicas(ctx, jobID, spec, leases)
		return
	}
	for {
		if len(leases) == 0 {
			if leases = d.auction(ctx, jobID, spec, round, wholeJob(spec), nil); len(leases) == 0 {
				return
			}
		}
		if !d.watchCompletion(ctx, jobID, spec, leases, round) {
			return
		}
		leases, round = nil, round+1
	}
}

// resume picks up the jobs a restart interrupted: auctions run again,
// running jobs wait for their leases again, and preempted work is
// re-auctioned.
func (d *jobDriver) resume(ctx context.Context) {
	jobs, err := d.db.Jobs()
	if err != nil {
		d.log.Warn("resume jobs", "err", err)
		return
	}
	for _, j := range jobs {
		if lease.JobState(j.State).Terminal() {
			continue
		}
		spec, err := auction.ParseJobSpec(j.Spec)
		if err != nil {
			d.jobs.set(j.ID, lease.JobFailed, "failed", "stored spec no longer parses: %v", err)
			continue
		}
		switch j.State {
		case lease.JobRunning:
			var leases []*store.Lease
			for _, id := range j.Leases {
				if l, err := d.db.GetLease(id); err == nil && !lease.State(l.State).Terminal() {
					leases = append(leases, l)
				}
			}
			if n := batchReplicas(spec); n > 1 {
				leases = d.replicaLeases(j, n)
			}
			if len(leases) > 0 {
				d.jobs.event(j.ID, "resumed", "following %d lease(s) again after a node restart", len(leases))
				d.bg.track(func() {
					d.runs.run(ctx, j.ID, func(ctx context.Context) { d.drive(ctx, j.ID, spec, 0, leases) })
				})
				continue
			}
			d.jobs.event(j.ID, "resumed", "no live lease left after a node restart; auctioning again")
		default:
			d.jobs.event(j.ID, "resumed", "auction restarted after a node restart")
		}
		if _, err := d.jobs.setState(j.ID, lease.JobAuctioning, "", ""); err != nil {
			continue
		}
		d.bg.track(func() { d.runs.run(ctx, j.ID, func(ctx context.Context) { d.drive(ctx, j.ID, spec, 0, nil) }) })
	}
}

// watchCompletion follows the job's leases until their work ends. All
// completed: the job completed. One preempted, or failed with its
// provider unreachable or unhealthy: the others are cancelled and it
// reports that the work is to be re-auctioned. One failed, expired,
// cancelled or unverified (reported completed without the chain and output
// to prove it): the others are cancelled and the job ends with that
// lease's outcome. A replicated batch job's leases are its replicas: one
// lost to its provider is auctioned again alone while the others run on
// (replaceReplica), and when all completed, their outputs are compared
// (settleReplicas).
func (d *jobDriver) watchCompletion(ctx context.Context, jobID string, spec *auction.JobSpec, leases []*store.Lease, round int) (reauction bool) {
	fctx, stopFollowing := context.WithCancel(ctx)
	defer stopFollowing()
	ended := make(chan *store.Lease, len(leases))
	live := map[string]*store.Lease{}
	unfollow := map[string]context.CancelFunc{}
	follow := func(l *store.Lease) {
		live[l.ID] = l
		lctx, stop := context.WithCancel(fctx)
		unfollow[l.ID] = stop
		d.bg.track(func() {
			end := d.follow(lctx, l)
			select {
			case ended <- end:
			case <-lctx.Done():
			}
		})
		// The payer outlives the job's following: it pays for the last
		// window even when the lease's end is heard first, and stops by
		// itself once the lease ended and its chain is read.
		_ = d.bg.Go(func(ctx context.Context) { d.pay(ctx, l) })
	}
	for _, l := range leases {
		if lease.State(l.State).Terminal() {
			// A replica that ended before a restart (replicaLeases).
			live[l.ID] = l
			ended <- l
			continue
		}
		follow(l)
	}
	replicas := slices.Clone(leases) // a replicated job's replicas now
	preempted := d.preemptions(jobID)
	cancelOthers := func(reason string) {
		for _, l := range live {
			d.cancelLease(context.WithoutCancel(ctx), l, reason)
		}
	}
	for len(live) > 0 {
		var l *store.Lease
		select {
		case <-ctx.Done():
			return false
		case l = <-ended:
		case lid := <-preempted:
			if cur, err := d.db.GetLease(lid); err == nil && live[lid] != nil {
				l = cur
			} else {
				continue
			}
		}
		if l == nil || live[l.ID] == nil {
			continue
		}
		delete(live, l.ID)
		if stop := unfollow[l.ID]; stop != nil {
			stop()
			delete(unfollow, l.ID)
		}
		if ctx.Err() != nil {
			return false // the job was cancelled or the node stops
		}
		_ = d.bg.Go(func(ctx context.Context) { d.settle(ctx, l) })
		lost := l.State == lease.Preempted || providerLost(l)
		if lost && batchReplicas(spec) > 1 && d.reauction && (l.State == lease.Preempted || round+1 < maxReauctions) {
			next, jobEnded := d.replaceReplica(ctx, jobID, spec, replicas, l, &round)
			if jobEnded {
				if ctx.Err() == nil {
					stopFollowing()
					cancelOthers("the job ended while a lost replica was auctioned again")
				}
				return false
			}
			i := slices.IndexFunc(replicas, func(r *store.Lease) bool { return r.ID == l.ID })
			if next == nil {
				replicas = slices.Delete(replicas, i, i+1) // the job runs the others
				continue
			}
			replicas[i] = next
			follow(next)
			continue
		}
		switch l.State {
		case lease.Completed:
			continue
		case lease.Preempted:
			stopFollowing()
			d.jobs.set(jobID, lease.JobPreempted, "preempted", "lease %s preempted by its provider", lease.Short(l.ID))
			cancelOthers("sibling lease preempted; job re-auctioned")
			if !d.reauction {
				d.jobs.set(jobID, lease.JobFailed, "failed", "preempted and market.reauction is off")
				return false
			}
			d.jobs.set(jobID, lease.JobAuctioning, "reauction", "re-auctioning the preempted work")
			return true
		case lease.Failed:
			if !providerLost(l) || !d.reauction || round+1 >= maxReauctions {
				break
			}
			stopFollowing()
			d.avoid.add(jobID, l.Provider)
			cancelOthers("sibling lease's provider unreachable or unhealthy; job re-auctioned")
			d.jobs.set(jobID, lease.JobAuctioning, "reauction", "lease %s: %s; re-auctioning the work", lease.Short(l.ID), l.Reason)
			return true
		}
		switch l.State {
		case lease.Completed, lease.Preempted:
		default:
			stopFollowing()
			cancelOthers(fmt.Sprintf("sibling lease %s", l.State))
			state := lease.JobFailed
			switch l.State {
			case lease.Expired:
				state = lease.JobExpired
			case lease.Cancelled:
				state = lease.JobCancelled
			case lease.Unverified:
				state = lease.JobUnverified
			}
			d.jobs.set(jobID, state, state, "lease %s %s: %s", lease.Short(l.ID), l.State, l.Reason)
			return false
		}
	}
	if batchReplicas(spec) > 1 {
		d.settleReplicas(ctx, jobID, spec, replicas)
		return false
	}
	d.jobs.set(jobID, lease.JobCompleted, "completed", "%s", completionSummary(leases, d.db))
	d.maybeCanary(jobID, leases)
	return false
}

// providerLost reports whether a failed lease failed because its provider
// became unreachable or its service unhealthy: work to move elsewhere.
func providerLost(l *store.Lease) bool {
	return l.State == lease.Failed && (strings.HasPrefix(l.Reason, reasonUnreachable) || strings.HasPrefix(l.Reason, reasonUnhealthy))
}

// completionSummary says how a completed job's leases ended.
func completionSummary(leases []*store.Lease, db *store.DB) string {
	if len(leases) == 1 {
		if l, err := db.GetLease(leases[0].ID); err == nil && l.OutputCID != "" {
			return fmt.Sprintf("exited 0; output %s (a %d-byte tar)", l.OutputCID, l.OutputSize)
		}
		return "exited 0"
	}
	return fmt.Sprintf("all %d leases exited 0", len(leases))
}
