package renter

import (
	"context"
	"fmt"
	"strings"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// canaryKeyPrefix starts the idempotency key of a canary job, followed by
// the ID of the job it checks: a canary is never checked by another, and
// asking twice for one job's canary returns the first.
const canaryKeyPrefix = "canary:"

// maybeCanary re-runs a completed job on a second provider when it is
// deterministic (auction.Deterministic), ran on one lease, is not itself
// a canary, and market.canary_rate makes it due (auction.CanaryDue over
// the deterministic jobs this renter completed). The canary is a job of
// its own, avoiding the first provider, paid like any; when it ends its
// output CID is compared with the first run's.
func (d *jobDriver) maybeCanary(jobID string, leases []*store.Lease) {
	if !(d.canaryRate > 0) || len(leases) != 1 || d.submitCanary == nil {
		return
	}
	j, err := d.db.GetJob(jobID)
	if err != nil || strings.HasPrefix(j.IdempotencyKey, canaryKeyPrefix) {
		return
	}
	spec, err := auction.ParseJobSpec(j.Spec)
	if err != nil {
		return
	}
	if w, err := spec.Workload(); err != nil || !auction.Deterministic(w) {
		return
	}
	if n := d.deterministic.Add(1) - 1; !auction.CanaryDue(n, d.canaryRate) {
		return
	}
	first, err := d.db.GetLease(leases[0].ID)
	if err != nil || first.OutputCID == "" {
		return
	}
	c, err := d.submitCanary(j, first.Provider)
	if err != nil {
		d.jobs.event(jobID, "canary", "no canary run: %v", err)
		return
	}
	d.jobs.event(jobID, "canary", "re-running the job on a second provider to check its output (market.canary_rate %g): job %s",
		d.canaryRate, lease.Short(c.ID))
	_ = d.bg.Go(func(ctx context.Context) { d.compareCanary(ctx, jobID, first, c.ID) })
}

// compareCanary waits for the canary job to end and compares its output
// with the first run's. Agreement is recorded on the job; a different
// output means one of the two providers returned a wrong result: a WASM
// job small enough is re-run to prove which (canary_proof.go), the liar's
// job ends unverified and the proof is gossiped; otherwise both jobs end
// unverified.
func (d *jobDriver) compareCanary(ctx context.Context, jobID string, first *store.Lease, canaryID string) {
	if events, err := d.jobs.watch(ctx, canaryID); err == nil {
		for range events {
		}
	}
	if ctx.Err() != nil {
		return
	}
	c, err := d.db.GetJob(canaryID)
	if err != nil {
		return
	}
	if c.State != lease.JobCompleted || len(c.Leases) == 0 {
		d.jobs.event(jobID, "canary", "canary job %s ended %s: no second output to compare (%s)", lease.Short(canaryID), c.State, c.Reason)
		return
	}
	second, err := d.db.GetLease(c.Leases[len(c.Leases)-1])
	if err != nil {
		return
	}
	if second.OutputCID == first.OutputCID {
		d.jobs.event(jobID, "canary-agreed", "provider %s ran the job again and got the same output %s",
			lease.Short(second.Provider), lease.Short(first.OutputCID))
		return
	}
	if origin, err := d.db.GetJob(jobID); err == nil {
		liar, err := d.prover.prove(ctx, origin, first, second)
		if err == nil {
			liarJob, honestJob, honest := jobID, canaryID, second
			if liar == second.Provider {
				liarJob, honestJob, honest = canaryID, jobID, first
			}
			d.jobs.set(liarJob, lease.JobUnverified, "wrong-result-proven",
				"provider %s returned a wrong result: re-running the job gave provider %s's output %s (fraud proof published, canary job %s)",
				lease.Short(liar), lease.Short(honest.Provider), lease.Short(honest.OutputCID), lease.Short(canaryID))
			d.jobs.event(honestJob, "wrong-result-proven", "re-running the job confirmed this output %s; provider %s's differed and was proven wrong",
				lease.Short(honest.OutputCID), lease.Short(liar))
			return
		}
		d.jobs.event(jobID, "canary", "the disagreement is not proven: %v", err)
	}
	why := fmt.Sprintf("a deterministic job gave two outputs: %s from provider %s, %s from provider %s (canary job %s); one of them is wrong",
		lease.Short(first.OutputCID), lease.Short(first.Provider), lease.Short(second.OutputCID), lease.Short(second.Provider), lease.Short(canaryID))
	d.jobs.set(jobID, lease.JobUnverified, "canary-disagreed", "%s", why)
	d.jobs.set(canaryID, lease.JobUnverified, "canary-disagreed", "%s", why)
	d.log.Warn("canary run disagreed", "job", jobID, "first", first.Provider, "second", second.Provider)
}

// canary records and starts a canary job of origin that avoids the
// provider that ran it (jobDriver.maybeCanary).
func (s *submitter) canary(origin *store.Job, avoid string) (*store.Job, error) {
	spec, err := auction.ParseJobSpec(origin.Spec)
	if err != nil {
		return nil, err
	}
	specCID, err := spec.CID()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	key := canaryKeyPrefix + origin.ID
	if prev, err := s.jobByKey(key); err != nil || prev != nil {
		return prev, err
	}
	now := s.now()
	id, err := newJobID(specCID, now.UnixMilli())
	if err != nil {
		return nil, err
	}
	job := &store.Job{
		ID: id, Name: origin.Name, SpecCID: specCID.String(), IdempotencyKey: key,
		Spec: origin.Spec, State: lease.JobAuctioning, CreatedAtMs: now.UnixMilli(), UpdatedAtMs: now.UnixMilli(),
		Events: []store.JobEvent{{AtMs: now.UnixMilli(), Kind: "canary", Message: fmt.Sprintf("canary run of job %s, avoiding provider %s", lease.Short(origin.ID), lease.Short(avoid))}},
	}
	if err := s.jobs.create(job); err != nil {
		return nil, err
	}
	s.avoid(id, avoid)
	if err := s.start(id, spec); err != nil {
		return nil, err
	}
	return job, nil
}
