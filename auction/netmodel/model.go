// Package netmodel is a message-level model of the idlegrid market at
// internet scale: not full nodes, but counts and bytes per node per second
// for RFQs, bids, capacity digests (on a provider's GPU shard and the CPU
// shard) and attestation heartbeats on their gossip topics
// (docs/protocol.md §3.5), with message sizes measured from
// really sealed messages and bids per RFQ from the real selection rule
// (auction.SelectBidders). It is pure: no I/O, no clock.
//
// The gossip costs are calibrated on measured networks, not taken from
// gossipsub's parameters: copies of each message a subscriber receives,
// gossip framing per copy and control traffic (IHAVE, IWANT, GRAFT,
// PRUNE) per message come from BenchmarkAuction's gossip counters
// (Calibration, docs/benchmarks.md). Publishers flood their own messages
// to every connected subscriber of the topic, so a provider also sends
// each of its digests and heartbeats once per such peer.
package netmodel

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/idlegrid/idlegrid/attest"
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

// Calibration is what the model takes from measured networks rather than
// from theory. MeasuredCalibration holds the values fitted to
// BenchmarkAuction.
type Calibration struct {
	// Copies of each gossip message a subscriber receives (the first and
	// the duplicates) with meshes of at most 8 peers, as built. Theory
	// says D-1 = 5 for mesh degree 6 with no IDONTWANT (messages under
	// 1 KiB); meshes run above D between heartbeats, and flood publishing
	// adds the publisher's direct copies. LibraryMeshCopies are those
	// with the library's bound of 12 (before 2026-12-05).
	Copies, LibraryMeshCopies float64
	// FrameBytes is the gossip envelope around a payload (from, seqno,
	// signature, topic, protobuf framing): bytes per copy received less
	// the sealed message.
	FrameBytes int
	// ControlPerGossipPeer is the control traffic (IHAVE, IWANT, GRAFT,
	// PRUNE, subscriptions) a subscriber receives per message on a topic,
	// per peer each node sends IHAVE to at a heartbeat (Fanout.Targets).
	// Most of it is IHAVE: a node advertises the message IDs of its last
	// three heartbeats, some 34 bytes an ID, so about 3 x 34 = 102 bytes
	// per gossip peer. Measured: 1,164-1,507 B a message at 50 nodes,
	// 3,485 at 100 and 6,447 at 200 with the library's gossip factor;
	// the fanout is what grew.
	ControlPerGossipPeer float64
	// ControlFixed is the control traffic a provider receives whatever
	// the messages, bytes a second: the heartbeats' GRAFT, PRUNE and
	// IHAVE that no message in the window caused. Without it the model
	// put control per message at the same 986 B at 50 and 100 nodes,
	// where 100 nodes measured 1,342-1,590: at a fifth of the message
	// rate, the fixed part is shared by fewer messages. Fitted as the
	// intercept of control bytes a second against gossip peers x
	// messages a second (FitCalibration).
	ControlFixed float64
	// DigestsPerRFQ counts the change-driven digests one RFQ (a real job,
	// not a probe) causes on each shard its providers are on: the
	// winner's lease and its end (each provider sends at most one a
	// second). The fitted runs also sent a digest for each firm hold on a
	// bid and another at its end; since holds alone send none
	// (auction.DigestChangedFor), 50 nodes measured 0.96 a job against
	// the fitted 1.47, so the model overstates digests a little.
	DigestsPerRFQ float64
	// AttestPerRFQ counts the messages one RFQ adds to the attest topic
	// (the award summary, the lease's receipt).
	AttestPerRFQ float64
	// AttestBytes is one heartbeat as gossiped (a telemetry entry of a
	// 16-GPU provider), envelope included: bytes per copy received.
	AttestBytes int
	// SummaryBytes is one award summary or receipt as gossiped.
	SummaryBytes int
}

// CopiesFor is the copies per message with the mesh bound m.
func (c Calibration) CopiesFor(m Mesh) float64 {
	if m == LibraryMesh {
		return c.LibraryMeshCopies
	}
	return c.Copies
}

// Mesh is gossipsub's mesh bound: how many peers a node keeps in a
// topic's mesh before its heartbeat prunes it back to D (6).
type Mesh int

// Mesh bounds.
const (
	// LibraryMesh: the library's Dhi, 12 (before 2026-12-05).
	LibraryMesh Mesh = iota
	// BuiltMesh: at most 8 (p2p's gossipDhi), as built.
	BuiltMesh
)

// MeasuredCalibration is fitted to the BenchmarkAuction runs marked Fit
// (FitCalibration, docs/benchmarks.md, issue 26); TestModelAgainstRuns
// checks it against every recorded run. The message sizes are measured:
// a heartbeat from the first run (mostly heartbeats on its attest topic),
// a summary or receipt from the second (no heartbeat in its 24 s).
// Both were measured with signed gossip messages, so the signed fields
// come off (SignedFieldsBytes).
var MeasuredCalibration = FitCalibration(BenchmarkRuns, 3450-SignedFieldsBytes, 1969-SignedFieldsBytes)

// SignedFieldsBytes are a signed gossip message's from, seqno and
// signature fields, each with its protobuf tag and length (an Ed25519
// peer ID of 38 bytes, 8 and 64). Every copy of the runs before
// 2026-12-05's unsigned release carried them; this release's messages
// have none (p2p.signaturePolicy). Measured at 200 nodes: 776 to 661
// bytes per RFQ copy, 629 to 513 per digest copy.
const SignedFieldsBytes = 116

// Signed is c with the signed fields back in every copy: the traffic of
// the releases that signed their gossip.
func (c Calibration) Signed() Calibration {
	c.FrameBytes += SignedFieldsBytes
	c.AttestBytes += SignedFieldsBytes
	c.SummaryBytes += SignedFieldsBytes
	return c
}

// Params are the model's inputs.
type Params struct {
	Providers  int
	RFQsPerSec float64 // network-wide
	Families   []FamilyShare
	WantBids   int // RFQ want_bids
	JobGPUs    int // GPUs per job
	// BidStreamBytes is the per-bid stream overhead (multistream, yamux).
	BidStreamBytes int
	// DigestRefresh is each provider's timer re-gossip of its unchanged
	// digest; 0: as built, auction.DigestRefresh over the provider's
	// largest shard (a minute, stretched in a large shard up to a third
	// of the record's 30-minute TTL).
	DigestRefresh time.Duration
	// HeartbeatEvery is how often each provider gossips a heartbeat
	// (p2p.telemetry_gossip_every: one telemetry entry per slot, as
	// built; every entry, one a minute, before), where Heartbeats says.
	HeartbeatEvery time.Duration
	// CPUShare is the share of providers that are also on the CPU shard
	// (auction.ProviderShards puts every provider offering a CPU share
	// there): each of their digests is published there too. As built,
	// a host with GPUs offers none unless its operator sets
	// provider.cpu_beside_gpus, so the share is that of the providers
	// without GPUs, taken to be 5%.
	CPUShare float64
	// GPUHostsOnCPU: GPU providers are on the CPU shard too (before
	// 2026-12-05: every one running wasm), so the provider the row is
	// for receives the CPU shard's digests. False, as built: the CPU
	// shard is the CPUShare of providers without GPUs, and a GPU
	// provider carries none of it.
	GPUHostsOnCPU bool
	// ChangesEverywhere: a digest changed by a GPU hold, lease or release
	// goes to every shard of its provider, the CPU shard too (before);
	// as built it goes to the shard of the GPU's family only
	// (auction.DigestChangedFor) and the CPU shard gets refreshes.
	ChangesEverywhere bool
	// Heartbeats says where heartbeats and award summaries and receipts
	// (AttestPerRFQ) go: the attestation topics of the provider's (the
	// lease's) GPU shards and region groups, as built; or, as they were
	// and as what-ifs, see HeartbeatScope.
	Heartbeats HeartbeatScope
	// TopicPeers are a node's connected subscribers of one of its topics,
	// whom its own publications are flooded to (at most its connection
	// manager's high water mark).
	TopicPeers int
	// Mesh is the mesh bound, which sets the copies per message.
	Mesh Mesh
	// Gossip is the nodes' IHAVE fanout (BuiltFanout as built).
	Gossip Fanout
	// RegionGroups splits every family shard into groups (1: scheme v2
	// as built; more is a what-if of a later scheme). By default the
	// groups are even and each RFQ goes to one of them; GroupShare and
	// GroupRFQShare say otherwise.
	RegionGroups int
	// GroupShare is the share of a family's providers in its largest
	// group: 0 for 1/RegionGroups (groups by a hash of the peer ID are
	// even; groups by country are not: supply gathers in a few).
	GroupShare float64
	// GroupRFQShare is the share of the family's RFQs that reach the
	// largest group: 0 for GroupShare (each RFQ on one group, as many
	// RFQs as hosts). An RFQ on L of G even groups: L/G; RFQs that name no
	// region, sent to every region group: they add their whole share.
	GroupRFQShare float64
	// Lots splits the largest shard into lots as providers do
	// (auction.LotsFor over its size, from 1,000 providers; each RFQ on
	// auction.LotsPerRFQ of them: docs/protocol.md §3.6), where
	// RegionGroups does not split it already. As built since step 3 of
	// lots (2026-12-06).
	Lots        bool
	Calibration Calibration
	Sizes       Sizes
}

// DefaultParams fills Params for providers and a network-wide RFQ rate
// with idlegrid's settings, measured message sizes and the measured
// calibration.
func DefaultParams(providers int, rfqsPerSec float64) (Params, error) {
	sz, err := MeasureSizes()
	if err != nil {
		return Params{}, err
	}
	return Params{
		Providers: providers, RFQsPerSec: rfqsPerSec, Families: DefaultFamilies,
		WantBids: auction.DefaultWantBids, JobGPUs: 1, BidStreamBytes: 100,
		DigestRefresh: 0, HeartbeatEvery: attest.DefaultBeatEvery, CPUShare: 0.05, GPUHostsOnCPU: false, Heartbeats: AttestShard,
		TopicPeers: 192, Mesh: BuiltMesh, Gossip: BuiltFanout, RegionGroups: 1, Lots: true, Calibration: MeasuredCalibration, Sizes: sz,
	}, nil
}

// HeartbeatScope is where heartbeats are gossiped.
type HeartbeatScope int

// Heartbeat scopes.
const (
	// HeartbeatsNetwork: heartbeats, summaries and receipts on
	// idlegrid/attest/1, which every node joins (before the shards'
	// attestation topics).
	HeartbeatsNetwork HeartbeatScope = iota
	// HeartbeatsShard: heartbeats on the attestation topics of the
	// provider's GPU shards (auction.BeatShards), summaries and receipts
	// still network-wide (the first step, 2026-12-03).
	HeartbeatsShard
	// AttestShard: heartbeats, summaries and receipts all on the
	// shards' attestation topics, as built.
	AttestShard
	// HeartbeatsNone: no heartbeat gossip (a what-if); summaries and
	// receipts on the shards' topics.
	HeartbeatsNone
)

// Row is the model's output for one (providers, RFQ rate) point, for a
// provider on the largest shard (the busiest). Rates are per second; kB =
// 1000 bytes. Inbound is what the provider receives; outbound adds to the
// copies it relays (about as many as it receives) the floods of its own
// digests and heartbeats and its bids.
type Row struct {
	Providers        int
	RFQsPerSec       float64
	ShardProviders   int           // providers on the largest shard
	ShardRFQsPerSec  float64       // RFQs published on it
	BidsPerRFQ       float64       // mean bids per RFQ drawn by SelectBidders
	ExpectedBids     float64       // the rule's expectation
	EveryoneBids     int           // feasible providers: bids per RFQ without selection
	DigestRefresh    time.Duration // the providers' digest refresh
	DigestsPerSec    float64       // digests published on the shard
	HeartbeatsPerSec float64       // messages on the attest topic it receives
	CPUDigestsPerSec float64       // digests on the CPU shard
	RFQCopies        float64       // RFQ copies received
	DigestCopies     float64       // digest copies received
	BidsSent         float64
	RFQKBps          float64 // inbound, control included
	DigestKBps       float64
	AttestKBps       float64
	CPUKBps          float64 // the CPU shard's digests
	FixedControlKBps float64 // control whatever the messages (Calibration.ControlFixed)
	BidKBps          float64 // outbound
	ProviderKBps     float64 // inbound total: RFQ + digest + attest + CPU shard
	ShardKBps        float64 // inbound on the shard's topics only: RFQ + digest
	OutKBps          float64 // outbound total
}

// Model evaluates p.
func Model(p Params) (Row, error) {
	c := p.Calibration
	if p.Providers <= 0 || p.RFQsPerSec < 0 || len(p.Families) == 0 || c.CopiesFor(p.Mesh) < 1 || p.DigestRefresh < 0 || p.HeartbeatEvery <= 0 {
		return Row{}, fmt.Errorf("netmodel.Model: bad params %+v", p)
	}
	share := 0.0
	for _, f := range p.Families {
		share = math.Max(share, f.Share)
	}
	groupShare := 1 / float64(max(p.RegionGroups, 1))
	if p.GroupShare > 0 {
		groupShare = p.GroupShare
	}
	rfqShare := groupShare
	if p.GroupRFQShare > 0 {
		rfqShare = p.GroupRFQShare
	}
	if g := auction.LotsFor(1, int(math.Round(float64(p.Providers)*share))); p.Lots && p.RegionGroups <= 1 && g > 1 {
		groupShare, rfqShare = 1/float64(g), float64(min(auction.LotsPerRFQ, g))/float64(g)
	}
	r := Row{Providers: p.Providers, RFQsPerSec: p.RFQsPerSec}
	r.ShardProviders = max(1, int(math.Round(float64(p.Providers)*share*groupShare)))
	r.ShardRFQsPerSec = p.RFQsPerSec * share * rfqShare
	bids, exp := drawBids(r.ShardProviders, p.WantBids, p.JobGPUs)
	r.BidsPerRFQ, r.ExpectedBids, r.EveryoneBids = bids, exp, r.ShardProviders
	frame := float64(c.FrameBytes)
	control := c.ControlPerGossipPeer * p.Gossip.Targets(min(p.TopicPeers, r.ShardProviders-1))
	copies := c.CopiesFor(p.Mesh)
	perRFQ := copies*(float64(p.Sizes.RFQ)+frame) + control
	perDigest := copies*(float64(p.Sizes.Digest)+frame) + control
	perBeat := copies*float64(c.AttestBytes) + control
	perSummary := copies*float64(c.SummaryBytes) + control
	cpuProviders := float64(p.Providers) * p.CPUShare
	refresh := p.DigestRefresh
	if refresh == 0 {
		largest := r.ShardProviders
		if p.GPUHostsOnCPU {
			largest = max(largest, int(cpuProviders))
		}
		refresh = auction.DigestRefresh(largest, time.Minute, 10*time.Minute)
	}
	r.DigestRefresh = refresh
	r.DigestsPerSec = float64(r.ShardProviders)/refresh.Seconds() + c.DigestsPerRFQ*r.ShardRFQsPerSec
	r.CPUDigestsPerSec = cpuProviders / refresh.Seconds()
	if p.ChangesEverywhere {
		r.CPUDigestsPerSec += c.DigestsPerRFQ * p.RFQsPerSec * p.CPUShare
	}
	var beats, summaries float64
	switch p.Heartbeats {
	case HeartbeatsNetwork:
		beats, summaries = float64(p.Providers)/p.HeartbeatEvery.Seconds(), c.AttestPerRFQ*p.RFQsPerSec
	case HeartbeatsShard:
		beats, summaries = float64(r.ShardProviders)/p.HeartbeatEvery.Seconds(), c.AttestPerRFQ*p.RFQsPerSec
	case AttestShard:
		beats, summaries = float64(r.ShardProviders)/p.HeartbeatEvery.Seconds(), c.AttestPerRFQ*r.ShardRFQsPerSec
	case HeartbeatsNone:
		summaries = c.AttestPerRFQ * r.ShardRFQsPerSec
	}
	r.HeartbeatsPerSec = beats + summaries
	r.RFQCopies = copies * r.ShardRFQsPerSec
	r.DigestCopies = copies * r.DigestsPerSec
	r.BidsSent = r.ShardRFQsPerSec * r.ExpectedBids / float64(r.ShardProviders)
	r.RFQKBps = r.ShardRFQsPerSec * perRFQ / 1000
	r.DigestKBps = r.DigestsPerSec * perDigest / 1000
	r.AttestKBps = (beats*perBeat + summaries*perSummary) / 1000
	if p.GPUHostsOnCPU {
		r.CPUKBps = r.CPUDigestsPerSec * perDigest / 1000
	}
	r.BidKBps = r.BidsSent * float64(p.Sizes.Bid+p.BidStreamBytes) / 1000
	r.ShardKBps = r.RFQKBps + r.DigestKBps
	r.FixedControlKBps = c.ControlFixed / 1000
	r.ProviderKBps = r.ShardKBps + r.AttestKBps + r.CPUKBps + r.FixedControlKBps
	// Own publications are flooded to every connected subscriber.
	ownDigests := r.DigestsPerSec / float64(r.ShardProviders)
	flood := float64(min(p.TopicPeers, r.ShardProviders-1)) * ownDigests * (float64(p.Sizes.Digest) + frame)
	if p.GPUHostsOnCPU && p.CPUShare > 0 {
		flood += float64(min(p.TopicPeers, int(cpuProviders)-1)) * ownDigests * (float64(p.Sizes.Digest) + frame)
	}
	switch p.Heartbeats {
	case HeartbeatsNetwork:
		flood += float64(min(p.TopicPeers, p.Providers-1)) / p.HeartbeatEvery.Seconds() * float64(c.AttestBytes)
	case HeartbeatsShard, AttestShard:
		flood += float64(min(p.TopicPeers, r.ShardProviders-1)) / p.HeartbeatEvery.Seconds() * float64(c.AttestBytes)
	}
	r.OutKBps = r.ProviderKBps + r.BidKBps + flood/1000
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
	b.WriteString("| providers | RFQs/s | largest shard | its RFQs/s | bids/RFQ (expected; everyone) | digests/s on it | attest msgs/s | CPU-shard digests/s | RFQ kB/s | digest kB/s | shard kB/s | attest kB/s | CPU shard kB/s | fixed control kB/s | **provider in kB/s** | out kB/s |\n")
	b.WriteString("|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %d | %g | %d | %.1f | %.1f (%.0f; %d) | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | **%.1f** | %.1f |\n",
			r.Providers, r.RFQsPerSec, r.ShardProviders, r.ShardRFQsPerSec, r.BidsPerRFQ, r.ExpectedBids, r.EveryoneBids,
			r.DigestsPerSec, r.HeartbeatsPerSec, r.CPUDigestsPerSec, r.RFQKBps, r.DigestKBps, r.ShardKBps, r.AttestKBps, r.CPUKBps, r.FixedControlKBps, r.ProviderKBps, r.OutKBps)
	}
	return b.String()
}
