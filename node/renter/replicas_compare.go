package renter

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// settleReplicas ends a replicated batch job whose replica leases all
// completed, by comparing their signed output CIDs (each lease verified on
// its own first: completionVerifier).
//
//   - All equal: the job completed with that output; every lease stays
//     completed and is paid like any.
//   - Different, on a deterministic job (auction.Deterministic): the
//     largest group is the candidate answer, but a re-run decides
//     (wrongResultProver): each provider proven wrong has its lease
//     overturned to unverified and the proof gossiped; the job completes
//     with the output the re-run confirmed.
//   - Different otherwise (a Docker job, or a disagreement no re-run
//     could settle): nothing proves who is wrong. The job ends
//     unverified naming the providers and their outputs; the minority's
//     leases are overturned to unverified, or every lease when no output
//     holds a majority (with two replicas, both), so reputation counts a
//     failure against each provider that may have lied. A spec that
//     names a verifier has its module judge the outputs first
//     (judgeReplicas): outputs it finds equivalent agree.
func (d *jobDriver) settleReplicas(ctx context.Context, jobID string, spec *auction.JobSpec, leases []*store.Lease) {
	ran := make([]*store.Lease, 0, len(leases))
	for _, l := range leases {
		if cur, err := d.db.GetLease(l.ID); err == nil {
			ran = append(ran, cur)
		}
	}
	if len(ran) < 2 {
		d.jobs.set(jobID, lease.JobCompleted, "completed", "%s; only one replica ran, so its output was not cross-checked", completionSummary(ran, d.db))
		return
	}
	outputs := make([]string, len(ran))
	for i, l := range ran {
		outputs[i] = l.OutputCID
	}
	groups := auction.GroupOutputs(outputs)
	if len(groups) == 1 {
		d.jobs.set(jobID, lease.JobCompleted, "replicas-agreed", "%d replicas on independent providers (%s) agree: output %s (a %d-byte tar)",
			len(ran), providersOf(ran, groups[0].Members), outputs[0], ran[0].OutputSize)
		return
	}
	unproven := "the job is not deterministic (only a WASM job without network access can be re-run to prove a wrong result)"
	if w, err := spec.Workload(); err == nil && auction.Deterministic(w) {
		err := d.proveReplicas(ctx, jobID, ran, groups)
		if err == nil || ctx.Err() != nil {
			return
		}
		unproven = "the disagreement is not proven: " + err.Error()
	}
	if m := cmp.Or(spec.VerifierModule(), spec.VerifierImage()); m != "" && d.judgeOutputs != nil {
		d.judgeReplicas(ctx, jobID, m, ran, groups, unproven)
		return
	}
	d.replicasDisagreed(jobID, ran, groups, unproven)
}

// proveReplicas settles a deterministic job's disagreeing replicas by
// re-running it: the candidate answer (the largest group) is judged
// against each other output; a proof that holds names the group that
// lied. Every lease whose output the re-run did not give is overturned,
// each liar by its own published proof, and the job completes with the
// output the re-run confirmed.
func (d *jobDriver) proveReplicas(ctx context.Context, jobID string, ran []*store.Lease, groups []auction.ReplicaGroup) error {
	job, err := d.db.GetJob(jobID)
	if err != nil {
		return err
	}
	truth := groups[0]
	var wrong []auction.ReplicaGroup
	judged := map[string]string{} // a lease proven wrong: the lease it was proven wrong against
	for _, g := range groups[1:] {
		a, b := ran[truth.Members[0]], ran[g.Members[0]]
		liar, err := d.prover.prove(ctx, job, a, b)
		if err != nil {
			return err
		}
		if liar == b.Provider {
			wrong, judged[b.ID] = append(wrong, g), a.ID
		} else {
			wrong, judged[a.ID], truth = append(wrong, truth), b.ID, g
		}
	}
	honest := ran[truth.Members[0]]
	var liars []string
	for _, g := range wrong {
		for _, m := range g.Members {
			l := ran[m]
			if judged[l.ID] != honest.ID {
				// Each liar gets its own proof against the confirmed
				// output (the re-run is remembered: this costs no run).
				if _, err := d.prover.prove(ctx, job, honest, l); err != nil {
					d.log.Warn("proof of a replica's wrong output", "lease", l.ID, "err", err)
				}
			}
			liars = append(liars, lease.Short(l.Provider))
			d.overturn(l, fmt.Sprintf("wrong result proven: re-running the job gave provider %s's output %s, not this lease's %s (fraud proof published)",
				lease.Short(honest.Provider), lease.Short(honest.OutputCID), lease.Short(l.OutputCID)))
		}
	}
	for _, m := range truth.Members {
		d.jobs.event(jobID, "wrong-result-proven", "lease %s on provider %s: re-running the job confirmed its output %s",
			lease.Short(ran[m].ID), lease.Short(ran[m].Provider), lease.Short(honest.OutputCID))
	}
	d.jobs.set(jobID, lease.JobCompleted, "wrong-result-proven",
		"output %s (a %d-byte tar) from provider(s) %s, confirmed by re-running the job; provider(s) %s returned a wrong result, proven and published",
		honest.OutputCID, honest.OutputSize, providersOf(ran, truth.Members), strings.Join(liars, ", "))
	return nil
}

// replicasDisagreed ends a job whose replicas disagree with nothing to
// prove which is wrong (settleReplicas).
func (d *jobDriver) replicasDisagreed(jobID string, ran []*store.Lease, groups []auction.ReplicaGroup, unproven string) {
	majority := auction.Majority(groups)
	parts := make([]string, len(groups))
	for i, g := range groups {
		parts[i] = fmt.Sprintf("%s from %s", lease.Short(g.Output), providersOf(ran, g.Members))
	}
	why := fmt.Sprintf("the %d replicas disagree: %s; %s", len(ran), strings.Join(parts, ", "), unproven)
	for i, g := range groups {
		if i == 0 && majority {
			continue
		}
		for _, m := range g.Members {
			d.overturn(ran[m], "replicas disagreed: this lease's output differs from "+map[bool]string{true: "the majority's", false: "another replica's"}[majority])
		}
	}
	d.jobs.set(jobID, lease.JobUnverified, "replicas-disagreed", "%s", why)
	d.log.Warn("replicas disagreed", "job", jobID, "outputs", len(groups))
}

// providersOf names the providers of the leases at idx, short.
func providersOf(ran []*store.Lease, idx []int) string {
	names := make([]string, 0, len(idx))
	for _, i := range idx {
		names = append(names, lease.Short(ran[i].Provider))
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// overturn records a lease its verifier had recorded completed as
// unverified, when comparing replicas showed its output wrong or
// unconfirmed: reputation counts it as a failure and `job result` no
// longer serves its output.
func (v *completionVerifier) overturn(l *store.Lease, reason string) {
	cur, err := v.leases.Update(l.ID, func(cur *store.Lease) bool {
		if cur.State == lease.Unverified {
			return false
		}
		cur.State, cur.Reason = lease.Unverified, reason
		return true
	})
	if err != nil {
		v.log.Warn("overturn a replica's lease", "lease", l.ID, "err", err)
		return
	}
	v.jobs.event(l.RenterJobID(), "unverified", "lease %s on provider %s: %s", lease.Short(l.ID), lease.Short(l.Provider), reason)
	v.leaseEnded(cur)
}

// replicaLeases are the replicas of a running replicated batch job that a
// restart interrupted, in replica order: for each replica number, the
// newest lease that runs it, when it is live, completed (compared with
// the rest when they end) or lost to its provider (auctioned again alone,
// replaceReplica). Leases awarded before replicas were numbered: of the
// job's last n leases, those live or completed, when one of them is live.
func (d *jobDriver) replicaLeases(j *store.Job, n int) []*store.Lease {
	newest := make([]*store.Lease, n+1)
	var last []*store.Lease
	for i, id := range j.Leases {
		l, err := d.db.GetLease(id)
		if err != nil {
			continue
		}
		if l.Replica >= 1 && l.Replica <= n {
			newest[l.Replica] = l
		}
		if i >= len(j.Leases)-n {
			last = append(last, l)
		}
	}
	var out []*store.Lease
	numbered := false
	for _, l := range newest {
		numbered = numbered || l != nil
		if l != nil && (l.State == lease.Completed || !lease.State(l.State).Terminal() || l.State == lease.Preempted || providerLost(l)) {
			out = append(out, l)
		}
	}
	if numbered {
		return out
	}
	running := false
	for _, l := range last {
		if l.State == lease.Completed || !lease.State(l.State).Terminal() {
			out = append(out, l)
			running = running || !lease.State(l.State).Terminal()
		}
	}
	if !running {
		return nil
	}
	return out
}

// replicaPending reports whether l is a replica of a batch job whose
// outputs are not compared yet (the job has not ended).
func replicaPending(db *store.DB, l *store.Lease) bool {
	j, err := db.GetJob(l.RenterJobID())
	if err != nil || lease.JobState(j.State).Terminal() {
		return false
	}
	spec, err := auction.ParseJobSpec(j.Spec)
	return err == nil && batchReplicas(spec) > 1
}
