package renter

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// replicaRenter is a renter with four providers whose capacity records
// back their bids, under the hardware fingerprints given.
func replicaRenter(t *testing.T, fingerprints ...string) (*Renter, []*fakeProvider) {
	t.Helper()
	r, _, provs := newRenter(t, len(fingerprints))
	fp := map[string]string{}
	for i, p := range provs {
		fp[p.ID.String()] = fingerprints[i]
	}
	r.auctioneer.awarder.record = func(_ context.Context, id peer.ID) (*auction.Capacity, error) {
		c := &auction.Capacity{Peer: id.String(), Region: auction.Region{Country: "de"}, FingerprintID: fp[id.String()],
			ExpiresAtMs: r.now().Add(time.Hour).UnixMilli()}
		for i := range 2 {
			c.GPUs = append(c.GPUs, auction.GPU{UUID: "GPU-" + id.String()[len(id.String())-6:] + "-" + string(rune('0'+i)), Model: "h100-sxm-80gb"})
		}
		return c, nil
	}
	return r, provs
}

func awardsOf(p *fakeProvider) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.awards
}

// TestReplicasGoToIndependentHosts: a job with replicas: 2. The
// cheapest bid wins replica 1; the next-cheapest is the same machine
// under another key (same fingerprint) and is never offered an award;
// the next declines, so replica 2 passes to the last. Each replica is
// one lease, named in the job's history.
func TestReplicasGoToIndependentHosts(t *testing.T) {
	r, provs := replicaRenter(t, "fp-a", "fp-a", "fp-b", "fp-c")
	provs[2].decline = "busy"
	spec, rfq, rfqID := rfqFor(t, r, 1)
	spec.Replicas = 2
	var bids []*auction.Bid
	var ids []string
	for i, p := range provs {
		b, id := bid(t, p, rfq, rfqID, 1, 1.0+0.1*float64(i))
		bids, ids = append(bids, b), append(ids, id)
	}
	j := waitJobState(t, r, startAward(t, r, spec, rfq, rfqID, bids, ids), lease.JobRunning)
	if len(j.Leases) != 2 {
		t.Fatalf("job names %d leases, want one per replica", len(j.Leases))
	}
	var got []string
	for _, id := range j.Leases {
		l, err := r.db.GetLease(id)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, l.Provider)
	}
	if got[0] != provs[0].ID.String() || got[1] != provs[3].ID.String() {
		t.Fatalf("replicas on %v, want the cheapest and, past the same machine and a decline, the last", got)
	}
	if n := awardsOf(provs[1]); n != 0 {
		t.Fatalf("the cheapest's machine under another key got %d awards, want none", n)
	}
	replicas := 0
	for _, ev := range j.Events {
		if ev.Kind == "replica" {
			replicas++
		}
	}
	if replicas != 2 {
		t.Fatalf("%d replica events, want 2: %+v", replicas, j.Events)
	}
}

// TestTooFewIndependentHostsAwardNothing: replicas: 3 with three bids
// from two machines ends unfilled, saying why, before any award.
func TestTooFewIndependentHostsAwardNothing(t *testing.T) {
	r, provs := replicaRenter(t, "fp-a", "fp-a", "fp-b")
	spec, rfq, rfqID := rfqFor(t, r, 1)
	spec.Replicas = 3
	var bids []*auction.Bid
	var ids []string
	for i, p := range provs {
		b, id := bid(t, p, rfq, rfqID, 1, 1.0+0.1*float64(i))
		bids, ids = append(bids, b), append(ids, id)
	}
	j := waitJobState(t, r, startAward(t, r, spec, rfq, rfqID, bids, ids), lease.JobUnfilled)
	if !strings.Contains(j.Reason, "replicas: 3 needs 3 independent providers") || !strings.Contains(j.Reason, "same hardware fingerprint") {
		t.Fatalf("reason %q, want the count and the host passed over", j.Reason)
	}
	for i, p := range provs {
		if n := awardsOf(p); n != 0 {
			t.Fatalf("provider %d got %d awards, want none", i, n)
		}
	}
}

// TestReplicasInDistinctRegions: replicas: 2 with replica_regions:
// distinct passes over a cheaper second host in the first replica's
// country for one in another, and records each replica's country;
// replicas: 3 with bids from two countries ends unfilled, naming them,
// before any award.
func TestReplicasInDistinctRegions(t *testing.T) {
	countries := []string{"de", "de", "fr", "fr"}
	bidsIn := func(r *Renter, provs []*fakeProvider, rfq *auction.RFQ, rfqID string) ([]*auction.Bid, []string) {
		var bids []*auction.Bid
		var ids []string
		for i, p := range provs {
			b, id := bidFrom(t, p, rfq, rfqID, 1, 1.0+0.1*float64(i), countries[i])
			bids, ids = append(bids, b), append(ids, id)
		}
		return bids, ids
	}

	r, provs := replicaRenter(t, "fp-a", "fp-b", "fp-c", "fp-d")
	placeIn(r, provs, countries...)
	spec, rfq, rfqID := rfqFor(t, r, 1)
	spec.Replicas, spec.ReplicaRegions = 2, auction.ReplicaRegionsDistinct
	bids, ids := bidsIn(r, provs, rfq, rfqID)
	j := waitJobState(t, r, startAward(t, r, spec, rfq, rfqID, bids, ids), lease.JobRunning)
	var got []string
	for _, id := range j.Leases {
		l, err := r.db.GetLease(id)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, l.Provider+" "+l.HostRegion)
	}
	want := []string{provs[0].ID.String() + " de", provs[2].ID.String() + " fr"}
	if !slices.Equal(got, want) {
		t.Fatalf("replicas on %v, want %v: the cheapest, then past the second host in de to fr", got, want)
	}
	if n := awardsOf(provs[1]); n != 0 {
		t.Fatalf("the second host in de got %d awards, want none", n)
	}

	r, provs = replicaRenter(t, "fp-a", "fp-b", "fp-c", "fp-d")
	placeIn(r, provs, countries...)
	spec, rfq, rfqID = rfqFor(t, r, 1)
	spec.Replicas, spec.ReplicaRegions = 3, auction.ReplicaRegionsDistinct
	bids, ids = bidsIn(r, provs, rfq, rfqID)
	j = waitJobState(t, r, startAward(t, r, spec, rfq, rfqID, bids, ids), lease.JobUnfilled)
	for _, part := range []string{"replicas: 3 needs 3 independent providers (distinct keys, hardware fingerprints and regions", "only 2 bid", "in region de, as provider", "2 countries: de, fr"} {
		if !strings.Contains(j.Reason, part) {
			t.Fatalf("reason %q, want it to say %q", j.Reason, part)
		}
	}
	for i, p := range provs {
		if n := awardsOf(p); n != 0 {
			t.Fatalf("provider %d got %d awards, want none", i, n)
		}
	}
}

// TestReplicaLeasesAfterRestart: a restart resumes a replicated job with
// its last auction's replicas, the completed ones included (they are
// compared with the rest when those end), not the leases of an earlier
// round that were cancelled.
func TestReplicaLeasesAfterRestart(t *testing.T) {
	r, _, _ := newRenter(t, 0)
	states := []string{lease.Cancelled, lease.Cancelled, lease.Completed, lease.Running}
	j := &store.Job{ID: "job"}
	for i, st := range states {
		l := &store.Lease{ID: fmt.Sprintf("lease-%d", i), State: st}
		if err := r.db.PutLease(l); err != nil {
			t.Fatal(err)
		}
		j.Leases = append(j.Leases, l.ID)
	}
	var got []string
	for _, l := range r.driver.replicaLeases(j, 2) {
		got = append(got, l.ID)
	}
	if !slices.Equal(got, []string{"lease-2", "lease-3"}) {
		t.Fatalf("resumed with %v, want the last round's lease-2 (completed) and lease-3 (running)", got)
	}
	got = got[:0]
	for _, l := range r.driver.replicaLeases(j, 3) {
		got = append(got, l.ID)
	}
	if !slices.Equal(got, []string{"lease-2", "lease-3"}) {
		t.Fatalf("3 replicas: resumed with %v, want lease-2 and lease-3 (lease-1 was cancelled)", got)
	}
}

// TestUnprovenDisagreementBlamesTheMinority: three replicas of a job no
// re-run can judge, two agreeing: the job ends unverified naming every
// provider, and only the odd one's lease is overturned; with no majority
// (two replicas, two outputs) both are.
func TestUnprovenDisagreementBlamesTheMinority(t *testing.T) {
	for _, tc := range []struct {
		outputs []string
		blamed  []bool
	}{
		{[]string{"bafkreix", "bafkreiy", "bafkreix"}, []bool{false, true, false}},
		{[]string{"bafkreix", "bafkreiy"}, []bool{true, true}},
	} {
		r, _, _ := newRenter(t, 0)
		jobID := fmt.Sprintf("job-%d", len(tc.outputs))
		if err := r.jobs.create(&store.Job{ID: jobID, State: lease.JobRunning}); err != nil {
			t.Fatal(err)
		}
		var ran []*store.Lease
		for i, o := range tc.outputs {
			l := &store.Lease{ID: fmt.Sprintf("lease-%d", i), JobID: jobID, Side: lease.SideRenter, Provider: fmt.Sprintf("provider-%d", i),
				State: lease.Completed, OutputCID: o}
			if err := r.db.PutLease(l); err != nil {
				t.Fatal(err)
			}
			ran = append(ran, l)
		}
		r.driver.replicasDisagreed(jobID, ran, auction.GroupOutputs(tc.outputs), "not deterministic")
		j, err := r.db.GetJob(jobID)
		if err != nil {
			t.Fatal(err)
		}
		if j.State != lease.JobUnverified {
			t.Fatalf("%v: job %s, want unverified", tc.outputs, j.State)
		}
		for i, l := range ran {
			if !strings.Contains(j.Reason, l.Provider) {
				t.Fatalf("%v: reason %q does not name %s", tc.outputs, j.Reason, l.Provider)
			}
			cur, err := r.db.GetLease(l.ID)
			if err != nil {
				t.Fatal(err)
			}
			if blamed := cur.State == lease.Unverified; blamed != tc.blamed[i] {
				t.Fatalf("%v: lease %d %s, want blamed %v", tc.outputs, i, cur.State, tc.blamed[i])
			}
		}
	}
}
