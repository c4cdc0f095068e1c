package nodetest_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/node/nodetest"
	"github.com/idlegrid/idlegrid/store"
)

// rfqsSeen counts the RFQs a node received on one shard.
func rfqsSeen(n *node.Node, family string) int {
	return len(n.RecentGossip(auction.GPUShard(family).RFQTopic()))
}

// TestRFQsStayInTheirShard: an RFQ for one GPU family reaches only that
// family's providers; a provider with two families is on both shards; a
// job that allows two families is published on both and gets bids from
// each. Heartbeats and award summaries, on the shards' attestation
// topics, reach the same nodes.
func TestRFQsStayInTheirShard(t *testing.T) {
	provs := []provOpts{
		{profile: "h100-sxm-80gb", gpus: 1, bronze: 2},
		{profile: "t4", gpus: 1, bronze: 0.3},
		{profile: "h100-sxm-80gb", gpus: 1, bronze: 2.5}, // also a T4 (below)
	}
	c, renter := auctionCluster(t, provs, nodetest.Options{Configure: func(i int, cfg *node.Config) {
		// A telemetry entry a second and a heartbeat slot of three (the
		// last rows of the test).
		cfg.Attest.Sample, cfg.Attest.Window = 100*time.Millisecond, time.Second
		cfg.P2P.TelemetryGossipEvery = beatEvery
		if i == 3 {
			cfg.GPU.Sim.Profiles = []string{"h100-sxm-80gb", "t4"}
		}
	}})
	ps := c.ByRole(node.RoleProvider)
	h100, t4, both := ps[0].Node, ps[1].Node, ps[2].Node
	for _, want := range []string{auction.GPUShard("h100").RFQTopic(), auction.GPUShard("t4").RFQTopic()} {
		if !slices.Contains(both.P2P().JoinedTopics(), want) {
			t.Fatalf("the two-family provider is not on %s: %v", want, both.P2P().JoinedTopics())
		}
	}
	if slices.Contains(t4.P2P().JoinedTopics(), auction.GPUShard("h100").RFQTopic()) {
		t.Fatal("a T4-only provider joined the H100 shard")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	j, err := renter.Renter().Submit(jobYAML(jobOpts{name: "h100-only", gpus: 1, model: "h100", duration: "1s"}))
	if err != nil {
		t.Fatal(err)
	}
	waitJob(t, ctx, renter, j.ID, lease.JobCompleted)
	if n := rfqsSeen(t4, "h100"); n != 0 {
		t.Fatalf("the T4 provider received %d H100 RFQs", n)
	}
	if rfqsSeen(h100, "h100") == 0 || rfqsSeen(both, "h100") == 0 {
		t.Fatal("an H100 provider missed the H100 RFQ")
	}
	// Its award summary goes to the H100 shard's attestation topic: the
	// renter and both H100 providers price it, the T4 provider never
	// hears it.
	pricesH100 := func(n *node.Node) bool {
		stats, _ := n.Trust().PriceIndex(time.Now().Add(-time.Hour), time.Now().Add(time.Minute))
		return slices.ContainsFunc(stats, func(s auction.PriceStat) bool { return auction.GPUFamily(s.Model) == "h100" })
	}
	if err := nodetest.WaitFor(ctx, "the H100 award summary at the H100 shard's nodes", func() bool {
		return pricesH100(renter) && pricesH100(h100) && pricesH100(both)
	}); err != nil {
		t.Fatal(err)
	}
	if pricesH100(t4) {
		t.Fatal("the T4 provider holds the H100 lease's award summary")
	}

	// Two families, two GPUs: the cheapest of each shard bids.
	j, err = renter.Renter().Submit(jobYAML(jobOpts{name: "two-families", gpus: 2, model: "h100, t4", duration: "1s", maxPrice: 9}))
	if err != nil {
		t.Fatal(err)
	}
	j = waitJob(t, ctx, renter, j.ID, lease.JobCompleted, lease.JobFailed, lease.JobUnfilled)
	if rfqsSeen(t4, "t4") == 0 {
		t.Fatal("the T4 provider did not receive the two-family RFQ")
	}
	var bids int
	for _, ev := range j.Events {
		if ev.Kind == "window" {
			bids = max(bids, ev.Bids)
		}
	}
	if bids < 2 {
		t.Fatalf("the two-family job drew %d bids, want bids from both shards; events %v", bids, eventKinds(j))
	}

	// Heartbeats stay in their shards too: the renter, whose view holds
	// both shards, and the T4 provider hear the two-family provider; the
	// T4 provider never hears the H100-only one.
	heard := func(n *node.Node, p *node.Node) bool {
		us, _ := n.Store().Uptimes()
		return slices.ContainsFunc(us, func(u *store.Uptime) bool { return u.Provider == p.ID().String() && u.Seen >= 2 })
	}
	if err := nodetest.WaitFor(ctx, "heartbeats on the shards' attestation topics", func() bool {
		return heard(renter, h100) && heard(renter, t4) && heard(renter, both) && heard(t4, both) && heard(both, h100)
	}); err != nil {
		t.Fatal(err)
	}
	if heard(t4, h100) {
		t.Fatal("the T4 provider holds heartbeats of the H100-only provider")
	}

	// One heartbeat gossiped per slot: while the provider appends six
	// telemetry entries (a second each, or slower on a loaded machine), it
	// gossips at most one per slot its entries span.
	topic := auction.GPUShard("h100").AttestTopic()
	member := ps[0]
	seq := func() uint64 {
		raw, err := member.Node.Store().ChainHead()
		if err != nil {
			t.Fatal(err)
		}
		h, err := attest.UnmarshalHead(raw)
		if err != nil {
			t.Fatal(err)
		}
		return h.Seq
	}
	first, firstAt, before := seq(), time.Now(), published(t, member.Registry, topic)
	if err := nodetest.WaitFor(ctx, "six more telemetry entries", func() bool { return seq() >= first+6 }); err != nil {
		t.Fatal(err)
	}
	took, got := time.Since(firstAt), published(t, member.Registry, topic)-before
	if most := float64(took/beatEvery) + 2; got > most {
		t.Fatalf("the H100 provider gossiped %v of its %d heartbeats in %v; at most %v (one per %v slot)", got, seq()-first, took, most, beatEvery)
	}
}

// beatEvery is TestRFQsStayInTheirShard's heartbeat slot: long enough
// that most slots hold several telemetry entries, short enough that the
// renter hears two heartbeats of each provider soon.
const beatEvery = 3 * time.Second

// published counts the gossip messages a node published on topic.
func published(t *testing.T, reg *prometheus.Registry, topic string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "idlegrid_gossip_messages_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["topic"] == topic && labels["direction"] == "published" {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func eventKinds(j *store.Job) string {
	var out []string
	for _, ev := range j.Events {
		out = append(out, ev.Kind+": "+ev.Message)
	}
	return strings.Join(out, "; ")
}
