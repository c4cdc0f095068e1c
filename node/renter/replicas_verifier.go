package renter

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// outputVerdict is what a job's verifier module said of two replicas'
// outputs (outputJudge.judge).
type outputVerdict struct {
	// Equivalent: the module exited 0.
	Equivalent bool
	// ExitCode is the module's exit code; -1 when it did not exit (a
	// trap, the time or memory limit).
	ExitCode int
	// Ended says how a run that did not exit 0 ended, in words ("exit
	// code 1", "max duration reached").
	Ended string
	// Tail is the end of what the module printed, printable ASCII.
	Tail string
}

// judgeReplicas settles, with the job's verifier module, replicas whose
// outputs differ where nothing proves which is wrong (settleReplicas).
// The largest group's first replica is the reference; each other group's
// first output is judged against it, and a group judged equivalent joins
// the reference's. When every group does, the job completes (event
// replicas-equivalent); otherwise it ends unverified as replicasDisagreed
// says, on the groups as the verdicts left them. Each verdict is a job
// event (verifier). It returns false, settling nothing, when ctx ended.
func (d *jobDriver) judgeReplicas(ctx context.Context, jobID, module string, ran []*store.Lease, groups []auction.ReplicaGroup, unproven string) bool {
	agreed := auction.ReplicaGroup{Output: groups[0].Output, Members: slices.Clone(groups[0].Members)}
	ref := ran[groups[0].Members[0]]
	var apart []auction.ReplicaGroup
	for _, g := range groups[1:] {
		other := ran[g.Members[0]]
		v, err := d.judgeOutputs(ctx, jobID, module, ref, other)
		if ctx.Err() != nil {
			return false
		}
		pair := fmt.Sprintf("outputs %s (provider %s) and %s (provider %s)",
			lease.Short(ref.OutputCID), lease.Short(ref.Provider), lease.Short(other.OutputCID), lease.Short(other.Provider))
		switch {
		case err != nil:
			d.jobs.event(jobID, "verifier", "verifier %s could not judge %s: %v; counted as a disagreement", lease.Short(module), pair, err)
			apart = append(apart, g)
		case v.Equivalent:
			d.jobs.event(jobID, "verifier", "verifier %s judged %s equivalent (exit 0)%s", lease.Short(module), pair, tailWords(v.Tail))
			agreed.Members = append(agreed.Members, g.Members...)
		default:
			d.jobs.event(jobID, "verifier", "verifier %s judged %s different (%s)%s", lease.Short(module), pair, v.Ended, tailWords(v.Tail))
			apart = append(apart, g)
		}
	}
	if len(apart) == 0 {
		served := d.servedReplica(jobID, ran)
		d.jobs.set(jobID, lease.JobCompleted, "replicas-equivalent",
			"%d replicas on independent providers (%s) returned %d different outputs that verifier %s judged equivalent; "+
				"`job result` serves lease %s's output %s (a %d-byte tar), each replica's own with --lease",
			len(ran), providersOf(ran, agreed.Members), len(groups), lease.Short(module),
			lease.Short(served.ID), served.OutputCID, served.OutputSize)
		return true
	}
	settled := append([]auction.ReplicaGroup{agreed}, apart...)
	// The reference's group stays first on a tie: it is the candidate.
	slices.SortStableFunc(settled, func(a, b auction.ReplicaGroup) int { return len(b.Members) - len(a.Members) })
	d.replicasDisagreed(jobID, ran, settled, unproven+fmt.Sprintf("; verifier %s judged %d of %d outputs different from the reference", lease.Short(module), len(apart), len(groups)-1))
	return true
}

// servedReplica is the lease whose output `job result` serves by default
// (fetcher.pickLease: the job's last lease with an output): the last of
// ran in the job's lease order.
func (d *jobDriver) servedReplica(jobID string, ran []*store.Lease) *store.Lease {
	if j, err := d.db.GetJob(jobID); err == nil {
		for _, id := range slices.Backward(j.Leases) {
			if i := slices.IndexFunc(ran, func(l *store.Lease) bool { return l.ID == id }); i >= 0 {
				return ran[i]
			}
		}
	}
	return ran[len(ran)-1]
}

// tailWords shows a verdict's output tail in an event, quoted.
func tailWords(tail string) string {
	if tail = strings.TrimSpace(tail); tail == "" {
		return ""
	}
	return fmt.Sprintf("; it printed %q", tail)
}
