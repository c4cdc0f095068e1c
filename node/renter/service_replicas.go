package renter

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// Replicated services (issue 30): a service spec with `replicas: N` runs
// on N distinct providers at once, each replica its own auction and
// lease, all of the same spec CID. The renter keeps N serving: a replica
// whose provider becomes unreachable or whose health check keeps failing
// (or that is preempted) is re-auctioned on its own, avoiding that
// provider and every provider that runs a sibling, while the others keep
// serving behind the endpoint (endpoint.go). Any other end of a replica
// (its lease expired, failed otherwise, was cancelled) ends the job as it
// would end a single lease, and the siblings are cancelled.

// isReplicatedService reports whether the spec is a service run, or
// that may scale, to more than one provider at once.
func isReplicatedService(spec *auction.JobSpec) bool {
	w, err := spec.Workload()
	_, hi := spec.ReplicaBounds()
	return err == nil && w.Service != nil && hi > 1
}

// replicaSlots records which lease serves each replica slot of a job
// now, so the endpoint can label its replicas by slot.
type replicaSlots struct {
	mu    sync.Mutex
	byJob map[string]map[string]int // lease ID -> slot
}

func newReplicaSlots() *replicaSlots { return &replicaSlots{byJob: map[string]map[string]int{}} }

func (s *replicaSlots) set(jobID, leaseID string, slot int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byJob[jobID] == nil {
		s.byJob[jobID] = map[string]int{}
	}
	s.byJob[jobID][leaseID] = slot
}

// slotOf is a lease's slot; false for a lease of no replicated service.
func (s *replicaSlots) slotOf(jobID, leaseID string) (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	slot, ok := s.byJob[jobID][leaseID]
	return slot, ok
}

func (s *replicaSlots) forget(jobID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byJob, jobID)
}

// replicaRun is one replicated service's run: its slots share the job's
// auctions one at a time, so each auction knows every provider its
// siblings hold.
type replicaRun struct {
	jobID    string
	spec     *auction.JobSpec
	auctions sync.Mutex
	// ended gets a replica's lease whose end ends the job (nil: the job
	// already ended, unfilled).
	ended chan *store.Lease
	// preempted carries each slot's preemption notices, by lease ID;
	// hosts is the host each slot's lease runs on (placement, below).
	mu        sync.Mutex
	preempted map[string]chan struct{}
	hosts     map[int]auction.ReplicaHost
}

// setHost records the host slot's lease runs on; clearHost forgets it.
func (r *replicaRun) setHost(slot int, l *store.Lease) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hosts[slot] = replicaHostOf(l)
}

func (r *replicaRun) clearHost(slot int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.hosts, slot)
}

// award is what slot's auction awards: one replica, on a host independent
// of every other slot's (another key and hardware fingerprint, and under
// replica_regions: distinct another country; auction.ReplicaConflict) and
// of lost, the host this slot just lost (nil: none). Two keys on one
// machine serving two replicas would fail together, which is what
// replicas are for.
func (r *replicaRun) award(slot int, lost *store.Lease) replicaAward {
	r.mu.Lock()
	defer r.mu.Unlock()
	want := replicaAward{replicas: []int{slot + 1}, total: max(r.spec.ReplicaCount(), slot+1, 2), rules: r.spec.ReplicaRules()}
	for s, h := range r.hosts {
		if s != slot {
			want.besides = append(want.besides, h)
		}
	}
	if lost != nil {
		want.besides = append(want.besides, replicaHostOf(lost))
	}
	return want
}

// driveReplicas runs a replicated service until it ends: a keeper per
// slot (following held, the leases a restart found, first), and the
// scaler when the spec sets bounds (service_scale.go).
func (d *jobDriver) driveReplicas(ctx context.Context, jobID string, spec *auction.JobSpec, held []*store.Lease) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	_, hi := spec.ReplicaBounds()
	n := max(spec.ReplicaCount(), min(len(held), hi)) // a scaled service resumes at its count
	run := &replicaRun{jobID: jobID, spec: spec, ended: make(chan *store.Lease), preempted: map[string]chan struct{}{}, hosts: map[int]auction.ReplicaHost{}}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer d.slots.forget(jobID)
	keepers := make([]*replicaKeeper, 0, hi)
	start := func(slot int, first *store.Lease) {
		kctx, stop := context.WithCancel(ctx)
		k := &replicaKeeper{stop: stop}
		keepers = append(keepers, k)
		wg.Go(func() { d.keepReplica(kctx, run, slot, first, &k.retired) })
	}
	for slot := range n {
		var first *store.Lease
		if slot < len(held) {
			first = held[slot]
		}
		start(slot, first)
	}
	sc := newReplicaScaler(spec, d.now())
	tick := time.NewTicker(scaleSample)
	defer tick.Stop()
	preempted := d.preemptions(jobID)
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			next, avg, overCap, ok := sc.sample(d.now(), len(keepers), d.load, d.cost, jobID)
			if !ok {
				continue
			}
			why := ""
			if overCap {
				why = ", and a million tokens cost more than max_usd_per_mtok"
			}
			if next > len(keepers) {
				d.jobs.event(jobID, "scaled", "%.1f requests in flight per replica over the window: adding replica %d", avg, len(keepers))
				start(len(keepers), nil)
			} else if next < len(keepers) {
				k := keepers[len(keepers)-1]
				keepers = keepers[:len(keepers)-1]
				d.jobs.event(jobID, "scaled", "%.2f requests in flight per replica over the window%s: removing replica %d", avg, why, len(keepers))
				k.retired.Store(true)
				k.stop()
			}
		case lid := <-preempted:
			run.mu.Lock()
			if ch := run.preempted[lid]; ch != nil {
				close(ch)
				delete(run.preempted, lid)
			}
			run.mu.Unlock()
		case l := <-run.ended:
			cancel()
			if l == nil {
				return
			}
			// The siblings are cancelled by the job's end.
			j, err := d.db.GetJob(jobID)
			if err == nil {
				for _, id := range j.Leases {
					if o, err := d.db.GetLease(id); err == nil && o.ID != l.ID && !lease.State(o.State).Terminal() {
						d.cancelLease(context.WithoutCancel(ctx), o, fmt.Sprintf("sibling replica %s", l.State))
					}
				}
			}
			state := endedJobState(l.State)
			d.jobs.set(jobID, state, state, "replica lease %s %s: %s", lease.Short(l.ID), l.State, l.Reason)
			return
		}
	}
}

// end tells the run that a replica's end ends the job (nil: the job
// already ended, unfilled); nothing once the keeper was stopped.
func (run *replicaRun) end(ctx context.Context, l *store.Lease) {
	select {
	case run.ended <- l:
	case <-ctx.Done():
	}
}

// replicaKeeper is one slot's keeper as the scaler sees it: retired and
// stopped, it cancels its lease and ends.
type replicaKeeper struct {
	stop    context.CancelFunc
	retired atomic.Bool
}

// keepReplica keeps one slot served: it auctions a lease for it (taking
// turns with the other slots), follows and pays it, and when it is lost
// to its provider, its health or a preemption auctions the slot again.
func (d *jobDriver) keepReplica(ctx context.Context, run *replicaRun, slot int, l *store.Lease, retired *atomic.Bool) {
	var wait *waitState   // a re-auction's or other slot's, across its tries
	var lost *store.Lease // the lease this slot just lost, whose host its next one avoids
	defer run.clearHost(slot)
	for round := 0; ctx.Err() == nil; {
		if l == nil {
			if wait == nil && (slot > 0 || round > 0) {
				wait = newPacedWait(d.now(), "as long as the service runs")
			}
			if l = d.auctionReplica(ctx, run, slot, round, lost, wait); l == nil {
				if wait == nil {
					run.end(ctx, nil) // the job's first auction found no plan
					return
				}
				if !sleepCtx(ctx, waitBackoff(d.now().Sub(wait.since))) {
					return
				}
				wait.tries++
				continue
			}
			wait = nil
		} else {
			d.avoid.hold(run.jobID, l.Provider)
		}
		d.slots.set(run.jobID, l.ID, slot)
		run.setHost(slot, l)
		end := d.serveReplica(ctx, run, l)
		run.clearHost(slot)
		d.avoid.release(run.jobID, l.Provider)
		if end == nil {
			if retired.Load() {
				d.cancelLease(context.WithoutCancel(ctx), l, "the service scaled down")
			}
			return // scaled down, the job was cancelled or the node stops
		}
		_ = d.bg.Go(func(ctx context.Context) { d.settle(ctx, end) })
		switch {
		case end.State == lease.Preempted && d.reauction:
		case providerLost(end) && d.reauction:
			d.avoid.add(run.jobID, end.Provider)
		default:
			run.end(ctx, end)
			return
		}
		d.jobs.event(run.jobID, "replica-lost", "replica %d (lease %s) %s: %s; re-auctioning it while the others serve",
			slot, lease.Short(end.ID), end.State, end.Reason)
		l, lost, round = nil, end, round+1
	}
}

// auctionReplica runs a slot's auction, holding the provider it wins
// before the next slot's auction starts. The first auction of slot 0 is
// the job's first (it waits as any job's, and one that found no plan
// ends the job); every other is one try of a paced wait that lasts as
// long as the service runs.
func (d *jobDriver) auctionReplica(ctx context.Context, run *replicaRun, slot, round int, lost *store.Lease, paced *waitState) *store.Lease {
	if paced != nil {
		round = max(1, round)
	}
	run.auctions.Lock()
	defer run.auctions.Unlock()
	leases := d.auction(ctx, run.jobID, run.spec, round, run.award(slot, lost), paced)
	if len(leases) == 0 {
		return nil
	}
	for _, extra := range leases[1:] {
		d.cancelLease(context.WithoutCancel(ctx), extra, "one lease per replica")
	}
	d.avoid.hold(run.jobID, leases[0].Provider)
	return leases[0]
}

// serveReplica follows and pays a replica's lease until it ends (or is
// preempted); nil when ctx ended first.
func (d *jobDriver) serveReplica(ctx context.Context, run *replicaRun, l *store.Lease) *store.Lease {
	fctx, stopFollowing := context.WithCancel(ctx)
	defer stopFollowing()
	preempted := make(chan struct{})
	run.mu.Lock()
	run.preempted[l.ID] = preempted
	run.mu.Unlock()
	defer func() {
		run.mu.Lock()
		delete(run.preempted, l.ID)
		run.mu.Unlock()
	}()
	ended := make(chan *store.Lease, 1)
	d.bg.track(func() { ended <- d.follow(fctx, l) })
	_ = d.bg.Go(func(ctx context.Context) { d.pay(ctx, l) })
	select {
	case <-ctx.Done():
		return nil
	case end := <-ended:
		if end == nil || ctx.Err() != nil {
			return nil
		}
		return end
	case <-preempted:
		if cur, err := d.db.GetLease(l.ID); err == nil {
			return cur
		}
		return l
	}
}

// endedJobState is the state a job ends in when one of its leases ended
// in s.
func endedJobState(s string) string {
	switch s {
	case lease.Completed:
		return lease.JobCompleted
	case lease.Expired:
		return lease.JobExpired
	case lease.Cancelled:
		return lease.JobCancelled
	case lease.Unverified:
		return lease.JobUnverified
	}
	return lease.JobFailed
}
