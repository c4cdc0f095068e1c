package nodetest

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/p2p/p2ptest/hostile"
)

// TestSybilDigestsDoNotShutTheMarket (issue 23): four hostile peers, each
// in a network of its own, pass on the validly signed digests of 200
// fresh keys claiming 8 free A10s and 8 GPUs of made-up families at
// $0.001 an hour. Before, the renter expected them to bid, the honest
// providers counted themselves out of the cheapest prefix, and every job
// went unfilled; RFQs naming no model went to the made-up families. Now a
// digest moves nothing until its provider's DHT record backs it: while
// the sybils are held and checked, jobs naming a10 and jobs naming no
// model lease at the honest price with the bid window closing early as
// before the attack, nothing routes to a made-up family, the sybils never
// show in a search, the peers that passed them on are cut off (graylisted,
// then banned), and once the attack ends the market goes on.
func TestSybilDigestsDoNotShutTheMarket(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	m := newHostileMarket(t, ctx)
	renter := m.renter.Node
	// Warm up (the renter learns that the providers bid), then the
	// baseline.
	for range 2 {
		m.job(t, ctx, "a10")
	}
	var base []hostileJob
	for range 2 {
		j := m.job(t, ctx, "a10")
		if !j.leased || j.price != honestPrice {
			t.Fatalf("baseline %s: leased %v at %d (%s)", j.name, j.leased, j.price, j.reason)
		}
		base = append(base, j)
	}

	topic := auction.GPUShard("a10").DigestTopic()
	onShard := append(slices.Clone(m.providers[:3]), m.renter)
	var attackers []*hostile.Attacker
	for i := range 4 {
		a := m.attacker(t, ctx, i, nil)
		for _, mem := range onShard { // each gets the sybils from the attacker itself
			if err := a.WaitTopicPeer(ctx, topic, mem.Node.ID()); err != nil {
				t.Fatal(err)
			}
		}
		attackers = append(attackers, a)
	}
	keys, raws := sybilDigests(t, 200, time.Now())
	for i, raw := range raws {
		if err := attackers[i%len(attackers)].PublishAs(ctx, topic, keys[i], raw); err != nil {
			t.Fatal(err)
		}
	}
	// Held digests are checked within milliseconds here: count them as the
	// validator's withhold verdicts. Each that fails its check costs its
	// forwarder 8 points, so after a handful the forwarder is graylisted
	// and the rest of its sybils never get in.
	if err := WaitFor(ctx, "the renter to hold sybil digests", func() bool {
		return verdicts(m.renter, topic)["withhold"] >= float64(4*len(attackers))
	}); err != nil {
		t.Fatalf("%v: verdicts %v", err, verdicts(m.renter, topic))
	}

	// Under attack: held or checked, the sybils move nothing.
	res, err := renter.Trust().Search(ctx, "", "", 0, false)
	if err != nil || len(res.Offers) != len(m.providers) {
		t.Fatalf("search under attack: %d offers (%v), want the %d honest providers", len(res.Offers), err, len(m.providers))
	}
	if fake := fakeShards(renter.Trust().ShardsFor(noModelRFQ(t, renter.ID()))); len(fake) > 0 {
		t.Fatalf("an RFQ naming no model would go to made-up families %v", fake)
	}
	for _, model := range []string{"a10", "", "a10"} {
		j := m.job(t, ctx, model)
		if !j.leased || j.price != honestPrice {
			t.Fatalf("job %s (model %q) under attack: leased %v at %d (%s); want the honest %d", j.name, model, j.leased, j.price, j.reason, honestPrice)
		}
		if base[len(base)-1].timing.early && !j.timing.early {
			t.Fatalf("job %s: the bid window ran to its end under attack (%d bids); before, it closed early", j.name, j.timing.bids)
		}
		t.Logf("under attack %s (model %q): %s, award %s (baseline %s)", j.name, model, earlyOrFull(j), j.timing.total, base[len(base)-1].timing.total)
	}
	if err := WaitFor(ctx, "every sybil digest checked and dropped", func() bool {
		v := renter.Trust().MarketView()
		return v.Held == 0 && v.Backed == len(m.providers)
	}); err != nil {
		t.Fatalf("%v: %+v", err, renter.Trust().MarketView())
	}
	for _, topic := range renter.P2P().JoinedTopics() {
		if strings.Contains(topic, "zzfake") {
			t.Fatalf("the renter follows a made-up family's topic %s", topic)
		}
	}
	// Every node on the shard cut off the peers that passed the sybils on.
	for _, mem := range onShard {
		for _, a := range attackers {
			if err := WaitFor(ctx, "the sybils' forwarder graylisted or banned", func() bool { return cutOff(mem, a.ID()) }); err != nil {
				t.Fatalf("member %d: %v (%.0f points)", mem.Index, err, mem.Node.P2P().Guard().Points(a.ID()))
			}
		}
	}

	// After the attack: the market goes on within a minute.
	for _, a := range attackers {
		_ = a.Close()
	}
	rctx, rcancel := context.WithTimeout(ctx, time.Minute)
	defer rcancel()
	if j := m.job(t, rctx, ""); !j.leased || j.price != honestPrice {
		t.Fatalf("after the attack: leased %v at %d (%s)", j.leased, j.price, j.reason)
	}
}

func earlyOrFull(j hostileJob) string {
	if j.timing.early {
		return "window closed early"
	}
	return "window ran full"
}

// a10Attest is the attestation topic of nodetest's A10 providers' shard:
// their leases' award summaries go there.
var a10Attest = auction.GPUShard("a10").AttestTopic()

// TestForgedSummariesDoNotMovePrices (issue 23): after honest awards, a
// hostile peer passes on 50 award summaries at $2.40 signed by fresh
// renter keys alone (no provider accepted them) and 50 more that fresh
// pairs of keys co-signed. The first are rejected at the edge (and cost
// their forwarder), the second are valid but not kept: no record backs
// their providers, so they would weigh nothing. `market prices` moves by
// no more than 5%.
func TestForgedSummariesDoNotMovePrices(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	m := newHostileMarket(t, ctx)
	renter := m.renter.Node
	for range 3 {
		if j := m.job(t, ctx, "a10"); !j.leased {
			t.Fatalf("honest job: %s", j.reason)
		}
	}
	median := func(n *Member) uint64 {
		stats, err := n.Node.Trust().PriceIndex(time.Now().Add(-time.Hour), time.Now().Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range stats {
			if auction.GPUFamily(s.Model) == "a10" && s.Tier == auction.TierBronze {
				return s.MedianMicro
			}
		}
		return 0
	}
	// The A10 shard's nodes: summaries of A10 leases go to its
	// attestation topic only (the T4 provider never hears them).
	watchers := []*Member{m.renter, m.providers[1], m.providers[2]}
	base := map[int]uint64{}
	for _, w := range watchers {
		if err := WaitFor(ctx, "the honest summaries in the index", func() bool { return median(w) > 0 }); err != nil {
			t.Fatalf("member %d: %v", w.Index, err)
		}
		base[w.Index] = median(w)
	}

	a := m.attacker(t, ctx, 9, nil)
	if err := a.WaitTopicPeer(ctx, a10Attest, renter.ID()); err != nil {
		t.Fatal(err)
	}
	before := len(storedSummaries(t, renter))
	unbacked := func() float64 {
		return CounterSum(t, m.renter.Registry, "idlegrid_trust_summaries_dropped_total", "reason", "unbacked")
	}
	dropped := unbacked()
	forged, cosigned := forgedSummaries(t, 50, 2_400_000)
	// The co-signed ones first: they are valid, and the forged ones get
	// their forwarder banned.
	for _, f := range cosigned {
		if err := a.PublishAs(ctx, a10Attest, f.key, f.raw); err != nil {
			t.Fatal(err)
		}
	}
	if err := WaitFor(ctx, "the co-signed summaries seen and not kept", func() bool {
		return unbacked() >= dropped+float64(len(cosigned))
	}); err != nil {
		t.Fatalf("%v: %v not kept, %v before", err, unbacked(), dropped)
	}
	for _, f := range forged {
		if err := a.PublishAs(ctx, a10Attest, f.key, f.raw); err != nil {
			break // banned
		}
	}
	if err := WaitFor(ctx, "the forwarder of forged summaries charged", func() bool {
		return renter.P2P().Guard().Points(a.ID()) > 0 || renter.P2P().Blocked(a.ID())
	}); err != nil {
		t.Fatal(err)
	}
	if n := len(storedSummaries(t, renter)); n != before {
		t.Fatalf("the renter stored %d summaries, want %d: forged or unbacked ones were kept", n, before)
	}
	for _, w := range watchers {
		got, want := median(w), base[w.Index]
		if diff := float64(got)/float64(want) - 1; diff > 0.05 || diff < -0.05 {
			t.Fatalf("member %d: the median moved from %d to %d", w.Index, want, got)
		}
	}
}

// TestSyncSourceOfSybilsIsCutOff (issue 23): a hostile peer answers digest
// sync with endless pages of freshly signed keys. The renter takes no
// more of them than one source's budget of unchecked providers, none
// shows in its market view, the source is charged for each whose record
// does not back it, banned, and not synced from again.
func TestSyncSourceOfSybilsIsCutOff(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	m := newHostileMarket(t, ctx)
	renter := m.renter.Node
	src := newSybilSyncSource(t, 512)
	a := m.attacker(t, ctx, 7, src.serve)
	if err := WaitFor(ctx, "the renter to sync from the hostile source", func() bool { return src.pages.Load() > 0 }); err != nil {
		t.Fatal(err)
	}
	if err := WaitFor(ctx, "the hostile source banned", func() bool { return renter.P2P().Blocked(a.ID()) }); err != nil {
		t.Fatalf("%v: %.0f points, %d pages served, view %+v", err, renter.P2P().Guard().Points(a.ID()), src.pages.Load(), renter.Trust().MarketView())
	}
	served := src.pagesTo(renter.ID())
	if v := renter.Trust().MarketView(); v.Backed != len(m.providers) {
		t.Fatalf("market view %+v: sybils backed", v)
	}
	if res, err := renter.Trust().Search(ctx, "", "", 0, false); err != nil || len(res.Offers) != len(m.providers) {
		t.Fatalf("search: %d offers, %v", len(res.Offers), err)
	}
	// One source's budget is 64 unchecked providers: two pages of 32.
	if served > 4 {
		t.Fatalf("the renter paged the sybil source %d times", served)
	}
	if j := m.job(t, ctx, "a10"); !j.leased || j.price != honestPrice {
		t.Fatalf("job after the sync attack: leased %v at %d (%s)", j.leased, j.price, j.reason)
	}
	if got := src.pagesTo(renter.ID()); got != served {
		t.Fatalf("the renter kept paging the banned source: %d pages, %d when it was banned", got, served)
	}
}

// TestFreshKeyRFQChurn (issue 23): two hostile peers flood the A10 shard
// with valid RFQs, each from a new renter key. Each key is within its own
// rate, so before every RFQ was accepted, forwarded and quoted. Now fresh
// renters' RFQs also spend their forwarder's and its network's budget:
// most are withheld where they enter, and honest jobs lease at the honest
// price throughout.
func TestFreshKeyRFQChurn(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	m := newHostileMarket(t, ctx)
	for range 2 {
		m.job(t, ctx, "a10")
	}
	var base []hostileJob
	for range 2 {
		base = append(base, m.job(t, ctx, "a10"))
	}
	topic := auction.GPUShard("a10").RFQTopic()
	churn := startRFQChurn(t, ctx, m, topic, 2, 200)
	var under []hostileJob
	for range 3 {
		j := m.job(t, ctx, "a10")
		if !j.leased || j.price != honestPrice {
			t.Fatalf("job %s under RFQ churn: leased %v at %d (%s)", j.name, j.leased, j.price, j.reason)
		}
		under = append(under, j)
	}
	sent, took := churn.stop()
	t.Logf("churn: %d RFQs from as many fresh keys in %s; award baseline %v, under churn %v", sent, took.Round(time.Millisecond), totals(base), totals(under))
	// Each peer that passes fresh renters' RFQs on, the two hostile ones
	// and the two other providers relaying what they took, has its own
	// budget at each provider.
	forwarders := 2 + 2
	bound := float64(forwarders)*(rfqForwarderBurst+rfqForwarderPerSec*took.Seconds()) + float64(len(base)+len(under)+2)
	for _, p := range m.providers[:3] {
		v := verdicts(p, topic)
		if v["accept"] > bound || v["withhold"] == 0 {
			t.Errorf("member %d took %.0f of %d fresh-key RFQs (withheld %.0f); at most %.0f pass the forwarders' budgets", p.Index, v["accept"], sent, v["withhold"], bound)
		}
	}
}

// The RFQ rates of node/trust/rfq_rate.go a fresh renter's RFQs spend at
// each forwarder.
const (
	rfqForwarderPerSec = 5
	rfqForwarderBurst  = 50
)

func totals(js []hostileJob) []time.Duration {
	var out []time.Duration
	for _, j := range js {
		out = append(out, j.timing.total)
	}
	return out
}

// cutOff reports whether m graylisted or banned p.
func cutOff(m *Member, p peer.ID) bool {
	for _, e := range m.Node.Trust().Peers() {
		if e.ID == p {
			return e.Graylisted || e.Banned
		}
	}
	return false
}
