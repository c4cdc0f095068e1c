package provider

import (
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/auction"
)

// marketNow is a Monday noon: calendars below close relative to it.
var marketNow = time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)

// marketHost is a one-A10 host with silver floor floorMicro whose calendar
// closes closeIn after marketNow (0: no calendar).
func marketHost(t *testing.T, floorMicro uint64, closeIn time.Duration) *auction.Capacity {
	t.Helper()
	sk, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := peer.IDFromPrivateKey(sk)
	c := &auction.Capacity{
		V: auction.CapacityVersion, Peer: id.String(), Seq: 1,
		IssuedAtMs: marketNow.UnixMilli(), ExpiresAtMs: marketNow.Add(time.Hour).UnixMilli(),
		Host: auction.Host{CPUCores: 8, RAMMiB: 32 << 10, DiskGiB: 100}, Region: auction.Region{Country: "de"},
		Reachability: auction.ReachPublic, Runtimes: []string{auction.RuntimeDocker},
		Floor: auction.FloorPrice{Silver: floorMicro}, Policy: auction.Policy{Tiers: []auction.Tier{auction.TierSilver}},
		GPUs: []auction.GPU{{UUID: "GPU-" + id.String(), Model: "a10-24gb", VRAMMiB: 24 << 10, ComputeCap: "8.6", Free: true}},
	}
	if closeIn > 0 {
		end := marketNow.Add(closeIn)
		c.Calendar = []auction.Window{{Day: time.Monday, StartMin: 0, EndMin: uint16(end.Hour()*60 + end.Minute()), FactorPermille: 1000}}
	}
	return c
}

func marketDigest(t *testing.T, c *auction.Capacity, at time.Time) *auction.Digest {
	t.Helper()
	d, err := auction.NewDigest(auction.DigestInput{Capacity: c, Seq: 1, Now: at})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// marketViewOf is self's market view over a shard holding others.
func marketViewOf(self *auction.Capacity, others []*auction.Digest) *marketView {
	return newMarketView(marketDeps{
		self: self.Peer, log: slog.New(slog.DiscardHandler), now: func() time.Time { return marketNow }, ttl: time.Minute,
		capacity:  func(uint64) (*auction.Capacity, error) { return self, nil },
		firmHeld:  func() map[string]bool { return nil },
		shardView: func(auction.Shard) []*auction.Digest { return others },
	})
}

// TestSelectedPassesOverClosingHosts: twenty cheaper hosts close in half
// an hour, too soon for a two-hour job; an open host dearer than all of
// them is in the cheapest prefix of those that can take the job, so it
// bids on every RFQ.
func TestSelectedPassesOverClosingHosts(t *testing.T) {
	var others []*auction.Digest
	for i := range 20 {
		others = append(others, marketDigest(t, marketHost(t, 1_000_000+uint64(i)*1000, 30*time.Minute), marketNow))
	}
	m := marketViewOf(marketHost(t, 3_000_000, 0), others)
	rfq := &auction.RFQ{
		Resources: auction.Resources{GPUs: 1, Models: []string{"a10"}}, Runtime: auction.RuntimeDocker,
		Tier: auction.TierSilver, MaxPriceMicro: 5_000_000, ExpectedDurationSec: 7200, MaxDurationSec: 7200, WantBids: 2,
	}
	topic := auction.GPUShard("a10").RFQTopic()
	for i := range 20 {
		if !m.selected(rfq, fmt.Sprint("rfq-", i), topic, &rfqLook{}) {
			t.Fatalf("rfq-%d: the only host that can take the job was not selected", i)
		}
	}
	// A closing host is not selected for a job it would refuse.
	closing := marketViewOf(marketHost(t, 500_000, 30*time.Minute), others)
	if closing.selected(rfq, "rfq-0", topic, &rfqLook{}) {
		t.Error("a host closing in 30 minutes selected itself for a 2-hour job")
	}
}

// TestSignalLeavesClosedHostsOut: the scarcity signal is the busy share of
// the GPUs for rent. Of five hosts three are outside their calendar (two
// said so, one's open period ended since its digest), one is leased and
// one free: half the GPUs for rent are busy (before, closed hosts counted
// as busy: 3 of 5).
func TestSignalLeavesClosedHostsOut(t *testing.T) {
	leased := marketHost(t, 1_000_000, 0)
	leased.GPUs[0].Free, leased.GPUs[0].LeaseID = false, "lease"
	closedHost := func() *auction.Capacity {
		c := marketHost(t, 1_000_000, time.Hour)
		c.Calendar[0].StartMin, c.Calendar[0].EndMin = 13*60, 14*60 // Monday 13:00-14:00: closed at noon
		return c
	}
	ended := marketHost(t, 1_000_000, 30*time.Minute)
	others := []*auction.Digest{
		marketDigest(t, leased, marketNow),
		marketDigest(t, marketHost(t, 1_000_000, 0), marketNow),
		marketDigest(t, closedHost(), marketNow),
		marketDigest(t, closedHost(), marketNow),
		marketDigest(t, ended, marketNow.Add(-time.Hour)), // issued open, closed since 12:30
	}
	m := marketViewOf(marketHost(t, 1_000_000, 0), others)
	m.now = func() time.Time { return marketNow.Add(45 * time.Minute) }
	rfq := &auction.RFQ{Resources: auction.Resources{GPUs: 1, Models: []string{"a10"}}, Tier: auction.TierSilver}
	if u := m.signal(rfq, &rfqLook{}).Utilization; u != 0.5 {
		t.Errorf("utilization %.2f, want 0.50 (1 busy of the 2 GPUs for rent)", u)
	}
}

// TestOneRFQReadsTheMarketOnce: deciding on an RFQ (the selection rule,
// then the scarcity signal of the quote) builds this provider's record
// once, and reads the shard's digests from trust at most once a
// shardViewFor: the RFQs of one second share a reading, the first after
// it reads afresh.
func TestOneRFQReadsTheMarketOnce(t *testing.T) {
	self := marketHost(t, 1_000_000, 0)
	others := []*auction.Digest{marketDigest(t, marketHost(t, 2_000_000, 0), marketNow)}
	m := marketViewOf(self, others)
	views, builds := 0, 0
	m.shardView = func(auction.Shard) []*auction.Digest { views++; return others }
	m.capacity = func(uint64) (*auction.Capacity, error) { builds++; return self, nil }
	wall := marketNow
	m.views.wall = func() time.Time { return wall }
	rfq := &auction.RFQ{
		Resources: auction.Resources{GPUs: 1, Models: []string{"a10"}}, Runtime: auction.RuntimeDocker,
		Tier: auction.TierSilver, MaxPriceMicro: 5_000_000, ExpectedDurationSec: 3600, MaxDurationSec: 3600, WantBids: 2,
	}
	topic := auction.GPUShard("a10").RFQTopic()
	for i, c := range []struct {
		after time.Duration // wall time since the RFQ before
		views int           // readings of the shard so far
	}{{0, 1}, {shardViewFor / 2, 1}, {shardViewFor / 2, 2}, {time.Millisecond, 2}} {
		wall = wall.Add(c.after)
		var look rfqLook
		if !m.selected(rfq, fmt.Sprint("rfq-", i), topic, &look) {
			t.Fatal("the cheaper of two hosts was not selected")
		}
		if u := m.signal(rfq, &look).Utilization; u != 0 {
			t.Errorf("utilization %.2f of two free hosts", u)
		}
		if views != c.views || builds != i+1 {
			t.Fatalf("after %d RFQs: the shard's digests read %d times (want %d), the record built %d times", i+1, views, c.views, builds)
		}
	}
}

// TestSelectedTellsItsPrefix: each bid decision hands its always-bid
// prefix, cheapest first, with the RFQ and its renter to the prefix
// watch (trust compares it with the RFQ's award summary).
func TestSelectedTellsItsPrefix(t *testing.T) {
	var others []*auction.Digest
	for i := range 6 {
		others = append(others, marketDigest(t, marketHost(t, 1_000_000+uint64(i)*1000, 0), marketNow))
	}
	m := marketViewOf(marketHost(t, 3_000_000, 0), others)
	type told struct {
		rfqID, renter string
		always        []string
	}
	var got []told
	m.notePrefix = func(rfqID, renter string, always []string) { got = append(got, told{rfqID, renter, always}) }
	rfq := &auction.RFQ{
		Renter: "renter", Resources: auction.Resources{GPUs: 1, Models: []string{"a10"}}, Runtime: auction.RuntimeDocker,
		Tier: auction.TierSilver, MaxPriceMicro: 5_000_000, ExpectedDurationSec: 60, MaxDurationSec: 60, WantBids: 2,
	}
	m.selected(rfq, "rfq-1", auction.GPUShard("a10").RFQTopic(), &rfqLook{})
	if len(got) != 1 || got[0].rfqID != "rfq-1" || got[0].renter != "renter" {
		t.Fatalf("told %+v, want one decision of rfq-1 by renter", got)
	}
	want := []string{others[0].Peer, others[1].Peer}
	if !slices.Equal(got[0].always, want) {
		t.Errorf("prefix %v, want the two cheapest %v", got[0].always, want)
	}
}

// TestSelectedOnALotTopic: an RFQ on a lot's topic is an auction among
// the lot's members, so the prefix is the cheapest of them: providers of
// the shard in another lot, or whose digests name another count, are left
// out however cheap. The shard's own topic is the lot of the providers
// naming no lots (Digest.MemberOf): the lots' providers no longer follow
// it.
func TestSelectedOnALotTopic(t *testing.T) {
	shard := auction.GPUShard("a10")
	const lots = 2
	var inLot, outLot []*auction.Digest
	var oneLot *auction.Digest
	// Priced by role, whatever order the keys come in: the two outside
	// the lot cheapest, then one in the lot by its key whose digest names
	// a single lot, then the lot's members.
	build := func(c *auction.Capacity, price uint64, lotted bool) *auction.Digest {
		c.Floor = auction.FloorPrice{Silver: price}
		in := auction.DigestInput{Capacity: c, Seq: 1, Now: marketNow}
		if lotted {
			in.Lots = map[auction.Shard]int{shard: lots}
		}
		d, err := auction.NewDigest(in)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	for len(inLot) < 2 || len(outLot) < 2 || oneLot == nil {
		c := marketHost(t, 0, 0)
		switch lot := auction.Lot(c.Peer, lots); {
		case lot != 0 && len(outLot) < 2:
			outLot = append(outLot, build(c, 1_000_000+uint64(len(outLot))*1000, true))
		case lot == 0 && oneLot == nil:
			oneLot = build(c, 1_002_000, false)
		case lot == 0 && len(inLot) < 2:
			inLot = append(inLot, build(c, 1_003_000+uint64(len(inLot))*1000, true))
		}
	}
	// The cheapest are outside the lot; the lot's members come last.
	others := append(append(append([]*auction.Digest{}, outLot...), oneLot), inLot...)
	m := marketViewOf(marketHost(t, 3_000_000, 0), others)
	var always []string
	m.notePrefix = func(_, _ string, a []string) { always = a }
	rfq := &auction.RFQ{
		Renter: "renter", Resources: auction.Resources{GPUs: 1, Models: []string{"a10"}}, Runtime: auction.RuntimeDocker,
		Tier: auction.TierSilver, MaxPriceMicro: 5_000_000, ExpectedDurationSec: 60, MaxDurationSec: 60, WantBids: 2,
	}
	m.selected(rfq, "rfq-1", auction.LotTopic(shard.RFQTopic(), 0, lots), &rfqLook{})
	if want := []string{inLot[0].Peer, inLot[1].Peer}; !slices.Equal(always, want) {
		t.Errorf("prefix on lot 0 of 2: %v, want the lot's two members %v", always, want)
	}
	self := m.self
	m.selected(rfq, "rfq-2", shard.RFQTopic(), &rfqLook{})
	if want := []string{oneLot.Peer, self}; !slices.Equal(always, want) {
		t.Errorf("prefix on the shard's topic: %v, want the provider naming no lots and this one %v", always, want)
	}
}
