// Package netmodel is a message-level model of the idlegrid market at
// internet scale: not full nodes, but counts and bytes per node per second
// for RFQs, bids and capacity digests on the sharded topics
// (docs/protocol.md §3.5), with message sizes measured from really sealed
// messages and bids per RFQ from the real selection rule
// (auction.SelectBidders). It is pure: no I/O, no clock.
//
// The gossip costs follow gossipsub v1.2 as idlegrid configures it
// (docs/protocol.md §3.1): every subscriber receives each message about
// D-1 times (each peer forwards to its D mesh peers but the sender; the
// messages are under the 1 KiB IDONTWANT threshold, so nothing suppresses
// duplicates), and advertises its ID in IHAVE to Dlazy peers for 3
// heartbeats.
package netmodel

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/idlegrid/idlegrid/auction"
)

// FamilyShare is one GPU family shard's share of providers and of RFQs.
type FamilyShare struct {
	Family string
	Share  float64
}

// DefaultFamilies is an assumed market mix, largest first: consumer cards
// lead, no family holds more than a fifth of the providers. Demand is
// taken to follow supply.
var DefaultFamilies = []FamilyShare{
	{"rtx-4090", 0.20}, {"rtx-3090", 0.14}, {"a100", 0.12}, {"h100", 0.10}, {"a10", 0.08}, {"l40s", 0.08},
	{"rtx-a6000", 0.07}, {"t4", 0.07}, {"v100", 0.06}, {"l4", 0.04}, {"other", 0.04},
}

// Params are the model's inputs.
type Params struct {
	Providers  int
	RFQsPerSec float64 // network-wide
	Families   []FamilyShare
	WantBids   int // RFQ want_bids
	JobGPUs    int // GPUs per job
	// Gossip: mesh degree D, lazy degree Dlazy, heartbeats an ID is
	// gossiped, bytes of one ID in IHAVE (32 + framing), and per-message
	// framing (from, seqno, signature, topic, protobuf tags).
	MeshDegree, GossipLazy, HistoryGossip int
	IHaveIDBytes, FrameBytes              int
	// BidStreamBytes is the per-bid stream overhead (multistream, yamux).
	BidStreamBytes int
	// DigestRefresh is each provider's timer re-gossip; DigestsPerRFQ
	// counts change-driven digests per RFQ (the winner's on award, and
	// again when the lease ends).
	DigestRefresh time.Duration
	DigestsPerRFQ float64
	// RegionGroups splits every family shard by region group (1: scheme
	// v2 as specified; more is a what-if of a later scheme that assumes
	// RFQs pinned to one group).
	RegionGroups int
	Sizes        Sizes
}

// DefaultParams fills Params for providers and a network-wide RFQ rate
// with idlegrid's gossip settings and measured message sizes.
func DefaultParams(providers int, rfqsPerSec float64) (Params, error) {
	sz, err := MeasureSizes()
	if err != nil {
		return Params{}, err
	}
	return Params{
		Providers: providers, RFQsPerSec: rfqsPerSec, Families: DefaultFamilies,
		WantBids: auction.DefaultWantBids, JobGPUs: 1,
		MeshDegree: 6, GossipLazy: 6, HistoryGossip: 3, IHaveIDBytes: 34, FrameBytes: 150,
		BidStreamBytes: 100, DigestRefresh: 10 * time.Minute, DigestsPerRFQ: 2, RegionGroups: 1, Sizes: sz,
	}, nil
}

// Row is the model's output for one (providers, RFQ rate) point, for a
// provider on the largest shard (the busiest). Rates are per second;
// bytes are inbound, and outbound is about the same (each copy received
// is one another node sent).
type Row struct {
	Providers       int
	RFQsPerSec      float64
	ShardProviders  int     // providers on the largest shard
	ShardRFQsPerSec float64 // RFQs published on it
	BidsPerRFQ      float64 // mean bids per RFQ drawn by SelectBidders
	ExpectedBids    float64 // the rule's expectation
	EveryoneBids    int     // feasible providers: bids per RFQ without selection
	RFQCopies       float64 // RFQ copies received
	DigestCopies    float64 // digest copies received
	BidsSent        float64
	RFQKBps         float64 // kB = 1000 bytes
	DigestKBps      float64
	BidKBps         float64
	ProviderKBps    float64 // total
}

// Model evaluates p.
func Model(p Params) (Row, error) {
	if p.Providers <= 0 || p.RFQsPerSec < 0 || len(p.Families) == 0 || p.MeshDegree < 2 || p.DigestRefresh <= 0 {
		return Row{}, fmt.Errorf("netmodel.Model: bad params %+v", p)
	}
	share := 0.0
	for _, f := range p.Families {
		share = math.Max(share, f.Share)
	}
	groups := float64(max(p.RegionGroups, 1))
	r := Row{Providers: p.Providers, RFQsPerSec: p.RFQsPerSec}
	r.ShardProviders = max(1, int(math.Round(float64(p.Providers)*share/groups)))
	r.ShardRFQsPerSec = p.RFQsPerSec * share / groups
	bids, exp := drawBids(r.ShardProviders, p.WantBids, p.JobGPUs)
	r.BidsPerRFQ, r.ExpectedBids, r.EveryoneBids = bids, exp, r.ShardProviders
	copies := float64(p.MeshDegree - 1)
	ihave := float64(p.HistoryGossip * p.GossipLazy * p.IHaveIDBytes)
	perRFQ := copies*float64(p.Sizes.RFQ+p.FrameBytes) + ihave
	perDigest := copies*float64(p.Sizes.Digest+p.FrameBytes) + ihave
	digests := float64(r.ShardProviders)/p.DigestRefresh.Seconds() + p.DigestsPerRFQ*r.ShardRFQsPerSec
	r.RFQCopies = copies * r.ShardRFQsPerSec
	r.DigestCopies = copies * digests
	r.BidsSent = r.ShardRFQsPerSec * r.ExpectedBids / float64(r.ShardProviders)
	r.RFQKBps = r.ShardRFQsPerSec * perRFQ / 1000
	r.DigestKBps = digests * perDigest / 1000
	r.BidKBps = r.BidsSent * float64(p.Sizes.Bid+p.BidStreamBytes) / 1000
	r.ProviderKBps = r.RFQKBps + r.DigestKBps + r.BidKBps
	return r, nil
}

// drawBids runs SelectBidders on a synthetic shard of n feasible
// providers (1..8 free GPUs, floors spread 1.0..2.0 USD) for 32 RFQs and
// returns the mean drawn and the expected bids per RFQ.
func drawBids(n, want, need int) (mean, expected float64) {
	rng := rand.New(rand.NewPCG(uint64(n), 12))
	view := make([]*auction.Digest, n)
	for i := range view {
		view[i] = &auction.Digest{
			Peer: fmt.Sprintf("p%07d", i), Seq: 1, Region: auction.Region{Country: "de"}, Runtimes: []string{auction.RuntimeDocker},
			Host:   auction.Host{CPUCores: 32, RAMMiB: 1 << 17, DiskGiB: 1000},
			Floor:  auction.FloorPrice{Silver: 1_000_000 + uint64(rng.IntN(1_000_001))},
			Models: []auction.DigestModel{{Model: "a10-24gb", VRAMMiB: 23028, ComputeCap: "8.6", Total: 8, Free: uint32(1 + rng.IntN(8))}},
		}
	}
	rfq := &auction.RFQ{Resources: auction.Resources{GPUs: uint32(need)}, Runtime: auction.RuntimeDocker, Tier: auction.TierSilver,
		MaxPriceMicro: 3_000_000, ExpectedDurationSec: 60, MaxDurationSec: 60, WantBids: uint32(want)}
	const rfqs = 32
	total := 0
	for i := range rfqs {
		sel := auction.SelectBidders(auction.BidSelectInput{RFQ: rfq, RFQID: fmt.Sprintf("rfq-%d", i), Shard: auction.GPUShard("a10"), Digests: view})
		total += len(sel.Always) + len(sel.Sampled)
		expected = sel.Expected
	}
	return float64(total) / rfqs, expected
}

// ScaleTable is the table in docs/benchmarks.md: 1,000, 10,000 and
// 100,000 providers at 1, 10 and 100 RFQs/s, with default parameters.
func ScaleTable() ([]Row, error) {
	var out []Row
	for _, n := range []int{1_000, 10_000, 100_000} {
		for _, rate := range []float64{1, 10, 100} {
			p, err := DefaultParams(n, rate)
			if err != nil {
				return nil, err
			}
			row, err := Model(p)
			if err != nil {
				return nil, err
			}
			out = append(out, row)
		}
	}
	return out, nil
}

// FormatTable renders rows as a Markdown table.
func FormatTable(rows []Row) string {
	var b strings.Builder
	b.WriteString("| providers | RFQs/s | largest shard | its RFQs/s | bids/RFQ (expected; everyone) | RFQ copies/s | digest copies/s | bids sent/s | RFQ kB/s | digest kB/s | bid kB/s | **provider kB/s** |\n")
	b.WriteString("|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %d | %g | %d | %.1f | %.1f (%.0f; %d) | %.1f | %.1f | %.3f | %.1f | %.1f | %.2f | **%.1f** |\n",
			r.Providers, r.RFQsPerSec, r.ShardProviders, r.ShardRFQsPerSec, r.BidsPerRFQ, r.ExpectedBids, r.EveryoneBids,
			r.RFQCopies, r.DigestCopies, r.BidsSent, r.RFQKBps, r.DigestKBps, r.BidKBps, r.ProviderKBps)
	}
	return b.String()
}
