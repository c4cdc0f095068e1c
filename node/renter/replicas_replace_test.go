package renter

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/node/roomtest"
	"github.com/idlegrid/idlegrid/store"
)

// placeIn puts the providers of a replicaRenter in countries: their
// capacity records name them (their bids must: bidFrom).
func placeIn(r *Renter, provs []*fakeProvider, countries ...string) {
	in := map[string]string{}
	for i, p := range provs {
		in[p.ID.String()] = countries[i]
	}
	record := r.auctioneer.awarder.record
	r.auctioneer.awarder.record = func(ctx context.Context, id peer.ID) (*auction.Capacity, error) {
		c, err := record(ctx, id)
		if c != nil {
			c.Region.Country = in[id.String()]
		}
		return c, err
	}
}

// replicaDriver runs replicated jobs in r for a test: its auctions award
// over bids every provider places for each RFQ in turn (cheapest first,
// from the countries given, de without), its leases end when the test
// finishes them, and nothing is paid. It returns what each auction was
// asked to award.
func replicaDriver(t *testing.T, r *Renter, provs []*fakeProvider, auctions int, countries ...string) func() []replicaAward {
	t.Helper()
	type round struct {
		rfq   *auction.RFQ
		rfqID string
		bids  []*auction.Bid
		ids   []string
	}
	var rounds []round
	for range auctions {
		_, rfq, rfqID := rfqFor(t, r, 1)
		rd := round{rfq: rfq, rfqID: rfqID}
		for i, p := range provs {
			country := "de"
			if countries != nil {
				country = countries[i]
			}
			b, id := bidFrom(t, p, rfq, rfqID, 1, 1.0+0.1*float64(i), country)
			rd.bids, rd.ids = append(rd.bids, b), append(rd.ids, id)
		}
		rounds = append(rounds, rd)
	}
	var mu sync.Mutex
	var asked []replicaAward
	r.driver.reauction = true
	r.driver.auction = func(ctx context.Context, jobID string, _ *auction.JobSpec, _ int, want replicaAward, paced *waitState) []*store.Lease {
		mu.Lock()
		k := len(asked)
		asked = append(asked, want)
		mu.Unlock()
		if k >= len(rounds) {
			return nil
		}
		rd := rounds[k]
		pa := &pendingAuction{rfq: rd.rfq, rfqID: rd.rfqID, jobID: jobID, answered: map[string]bool{}, early: make(chan struct{})}
		leases, _ := r.auctioneer.award(ctx, pa, rd.bids, rd.ids, want, paced)
		return leases
	}
	r.driver.follow = func(ctx context.Context, l *store.Lease) *store.Lease {
		for {
			if cur, err := r.db.GetLease(l.ID); err == nil && lease.State(cur.State).Terminal() {
				return cur
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	r.driver.pay = func(context.Context, *store.Lease) {}
	r.driver.settle = func(context.Context, *store.Lease) {}
	roomtest.Run(t, r.Run)
	roomtest.Eventually(t, 5*time.Second, "the renter runs", r.bg.running)
	return func() []replicaAward {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(asked)
	}
}

// jobLeases are the job's leases as stored now, in award order.
func jobLeases(t *testing.T, r *Renter, jobID string) []*store.Lease {
	t.Helper()
	j, err := r.db.GetJob(jobID)
	if err != nil {
		t.Fatal(err)
	}
	var out []*store.Lease
	for _, id := range j.Leases {
		l, err := r.db.GetLease(id)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, l)
	}
	return out
}

// startReplicas starts a job of spec's replicas on the room's driver and
// returns its leases once every replica has one.
func startReplicas(t *testing.T, r *Renter, jobID string, spec *auction.JobSpec) []*store.Lease {
	t.Helper()
	if err := r.jobs.create(&store.Job{ID: jobID, State: lease.JobAuctioning, CreatedAtMs: r.now().UnixMilli()}); err != nil {
		t.Fatal(err)
	}
	if err := r.driver.start(jobID, spec); err != nil {
		t.Fatal(err)
	}
	var leases []*store.Lease
	roomtest.Eventually(t, 10*time.Second, "every replica leased", func() bool {
		leases = jobLeases(t, r, jobID)
		return len(leases) == spec.ReplicaCount()
	})
	return leases
}

// TestLostReplicaReauctionedAlone: a job with replicas: 2 runs on the two
// cheapest hosts, and the first is preempted. Only it is auctioned again:
// the other replica keeps running (never cancelled), and the replacement,
// replica 1 again, passes over the preempted provider, the kept replica's
// provider and a second key on the kept one's machine, to the last host.
// Both replicas then complete with one output and the job completes.
func TestLostReplicaReauctionedAlone(t *testing.T) {
	r, provs := replicaRenter(t, "fp-a", "fp-b", "fp-b", "fp-c")
	asked := replicaDriver(t, r, provs, 2)
	spec, _, _ := rfqFor(t, r, 1)
	spec.Replicas = 2
	const jobID = "job-lost-replica"
	first := startReplicas(t, r, jobID, spec)
	if first[0].Provider != provs[0].ID.String() || first[1].Provider != provs[1].ID.String() || first[0].Replica != 1 || first[1].Replica != 2 {
		t.Fatalf("replicas %d on %s and %d on %s, want 1 on the cheapest and 2 on the next", first[0].Replica, first[0].Provider, first[1].Replica, first[1].Provider)
	}
	if first[1].HostFingerprint != "fp-b" {
		t.Fatalf("replica 2 records host fingerprint %q, want fp-b", first[1].HostFingerprint)
	}

	r.follower.finishLease(first[0].ID, lease.Preempted, "the owner is back")
	r.preempts.of(jobID) <- first[0].ID
	var all []*store.Lease
	roomtest.Eventually(t, 10*time.Second, "replica 1 auctioned again", func() bool {
		all = jobLeases(t, r, jobID)
		return len(all) == 3
	})
	next := all[2]
	if next.Provider != provs[3].ID.String() || next.Replica != 1 {
		t.Fatalf("replica %d re-leased on %s, want replica 1 on the last host (past the lost one, the kept one and its machine)", next.Replica, next.Provider)
	}
	if n := awardsOf(provs[2]); n != 0 {
		t.Fatalf("the kept replica's machine under another key got %d awards, want none", n)
	}
	if kept, _ := r.db.GetLease(first[1].ID); lease.State(kept.State).Terminal() {
		t.Fatalf("the replica kept running is %s (%s), want it left running", kept.State, kept.Reason)
	}
	if j, _ := r.db.GetJob(jobID); j.State != lease.JobRunning {
		t.Fatalf("job %s while its lost replica was replaced, want running", j.State)
	}
	want := asked()
	if len(want) != 2 || !slices.Equal(want[1].replicas, []int{1}) || len(want[1].besides) != 2 {
		t.Fatalf("auctions asked for %+v, want every replica, then replica 1 alone beside both first hosts", want)
	}

	for _, l := range []*store.Lease{first[1], next} {
		if _, _, err := r.follower.leases.Finish(l.ID, lease.Completed, "", func(l *store.Lease) { l.OutputCID = "bafkreiout" }); err != nil {
			t.Fatal(err)
		}
	}
	j := waitJobState(t, r, jobID, lease.JobCompleted, lease.JobUnverified, lease.JobFailed)
	if j.State != lease.JobCompleted {
		t.Fatalf("job %s: %s, want completed by the two replicas' agreement", j.State, j.Reason)
	}
	lost := 0
	for _, ev := range j.Events {
		if ev.Kind == "replica-lost" {
			lost++
		}
	}
	if lost != 1 {
		t.Fatalf("%d replica-lost events, want 1: %+v", lost, j.Events)
	}
}

// TestLostReplicaReplacedInAnotherRegion: replicas: 2 in distinct
// regions run in de and fr; the one in fr is preempted. Its replacement
// passes over the other host in fr (the lost replica's country) for the
// one in nl, and the replica in de keeps running.
func TestLostReplicaReplacedInAnotherRegion(t *testing.T) {
	r, provs := replicaRenter(t, "fp-a", "fp-b", "fp-c", "fp-d")
	countries := []string{"de", "fr", "fr", "nl"}
	placeIn(r, provs, countries...)
	replicaDriver(t, r, provs, 2, countries...)
	spec, _, _ := rfqFor(t, r, 1)
	spec.Replicas, spec.ReplicaRegions = 2, auction.ReplicaRegionsDistinct
	const jobID = "job-lost-replica-region"
	first := startReplicas(t, r, jobID, spec)
	if first[1].Provider != provs[1].ID.String() || first[1].HostRegion != "fr" {
		t.Fatalf("replica 2 on %s in %q, want the host in fr", first[1].Provider, first[1].HostRegion)
	}
	r.follower.finishLease(first[1].ID, lease.Preempted, "the owner is back")
	var all []*store.Lease
	roomtest.Eventually(t, 10*time.Second, "replica 2 auctioned again", func() bool {
		all = jobLeases(t, r, jobID)
		return len(all) == 3
	})
	if next := all[2]; next.Provider != provs[3].ID.String() || next.Replica != 2 || next.HostRegion != "nl" {
		t.Fatalf("replica %d re-leased on %s in %q, want replica 2 in nl (fr was the lost one's country)", next.Replica, next.Provider, next.HostRegion)
	}
	if n := awardsOf(provs[2]); n != 0 {
		t.Fatalf("the other host in fr got %d awards, want none", n)
	}
	if kept, _ := r.db.GetLease(first[0].ID); lease.State(kept.State).Terminal() {
		t.Fatalf("the replica in de is %s, want it left running", kept.State)
	}
}

// TestNumberedReplicaLeasesAfterRestart: a restart resumes each replica
// number's newest lease: a completed one, a replacement that runs (not
// the lost lease it replaced), and a lost one not yet replaced, which is
// auctioned again.
func TestNumberedReplicaLeasesAfterRestart(t *testing.T) {
	r, _, _ := newRenter(t, 0)
	leases := []struct {
		replica int
		state   string
		reason  string
	}{
		{1, lease.Completed, ""},
		{2, lease.Preempted, "owner back"},
		{3, lease.Running, ""},
		{2, lease.Running, ""},
		{3, lease.Failed, reasonUnreachable + " for 1m"},
	}
	j := &store.Job{ID: "job"}
	for i, l := range leases {
		sl := &store.Lease{ID: fmt.Sprintf("lease-%d", i), State: l.state, Reason: l.reason, Replica: l.replica}
		if err := r.db.PutLease(sl); err != nil {
			t.Fatal(err)
		}
		j.Leases = append(j.Leases, sl.ID)
	}
	var got []string
	for _, l := range r.driver.replicaLeases(j, 3) {
		got = append(got, l.ID)
	}
	if !slices.Equal(got, []string{"lease-0", "lease-3", "lease-4"}) {
		t.Fatalf("resumed with %v, want lease-0 (replica 1, completed), lease-3 (replica 2's replacement) and lease-4 (replica 3, lost)", got)
	}
}
