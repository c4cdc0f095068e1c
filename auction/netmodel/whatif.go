package netmodel

import (
	"fmt"
	"strings"
	"time"

	"github.com/idlegrid/idlegrid/attest"
)

// WhatIf is one row of WhatIfs: a change from the defaults.
type WhatIf struct {
	Name          string
	RegionGroups  int
	CPUShare      float64
	GPUHostsOnCPU bool
	// ChangesEverywhere: see Params.
	ChangesEverywhere bool
	Heartbeats        HeartbeatScope
	HeartbeatEvery    time.Duration
	DigestRefresh     time.Duration
	Gossip            Fanout
	Mesh              Mesh
	// GroupShare and GroupRFQShare: see Params (0: even groups, each RFQ
	// on one).
	GroupShare, GroupRFQShare float64
	// Signed: gossip messages carry from, seqno and a signature, as they
	// did before 2026-12-05's unsigned release (Calibration.Signed).
	Signed bool
}

// WhatIfList are the rows of WhatIfs, in order: how the traffic came
// down, then the splits not built.
var WhatIfList = []WhatIf{
	{"before: one network-wide attest topic, every telemetry entry, digests every minute and on every change to every shard", 1, 1, true, true, HeartbeatsNetwork, time.Minute, time.Minute, LibraryFanout, LibraryMesh, 0, 0, true},
	{"heartbeats on the shards' topics (summaries network-wide)", 1, 1, true, true, HeartbeatsShard, time.Minute, time.Minute, LibraryFanout, LibraryMesh, 0, 0, true},
	{"and summaries and receipts on the shards' topics", 1, 1, true, true, AttestShard, time.Minute, time.Minute, LibraryFanout, LibraryMesh, 0, 0, true},
	{"and one heartbeat per 10-minute slot", 1, 1, true, true, AttestShard, attest.DefaultBeatEvery, time.Minute, LibraryFanout, LibraryMesh, 0, 0, true},
	{"and digest refreshes stretched in large shards", 1, 1, true, true, AttestShard, attest.DefaultBeatEvery, 0, LibraryFanout, LibraryMesh, 0, 0, true},
	{"and a GPU change's digest to its family's shard only", 1, 1, true, false, AttestShard, attest.DefaultBeatEvery, 0, LibraryFanout, LibraryMesh, 0, 0, true},
	{"and IHAVE to 8 peers a heartbeat, not a quarter of them", 1, 1, true, false, AttestShard, attest.DefaultBeatEvery, 0, BuiltFanout, LibraryMesh, 0, 0, true},
	{"and the CPU shard only for hosts offering a CPU share, by default those without GPUs, 5%", 1, 0.05, false, false, AttestShard, attest.DefaultBeatEvery, 0, BuiltFanout, LibraryMesh, 0, 0, true},
	{"and meshes of at most 8 peers, not 12", 1, 0.05, false, false, AttestShard, attest.DefaultBeatEvery, 0, BuiltFanout, BuiltMesh, 0, 0, true},
	{"and gossip messages without author, sequence number or signature (as built until step 3 of lots)", 1, 0.05, false, false, AttestShard, attest.DefaultBeatEvery, 0, BuiltFanout, BuiltMesh, 0, 0, false},
	{"what-if: and 8 even groups, each RFQ on one (the earlier what-if of 8 region groups)", 8, 0.05, false, false, AttestShard, attest.DefaultBeatEvery, 0, BuiltFanout, BuiltMesh, 0, 0, false},
	{"what-if: and no heartbeat gossip", 8, 0.05, false, false, HeartbeatsNone, attest.DefaultBeatEvery, 0, BuiltFanout, BuiltMesh, 0, 0, false},
	{"what-if, from as built: 8 region groups by country, the largest with 40% of a family's hosts and of its RFQs", 8, 0.05, false, false, AttestShard, attest.DefaultBeatEvery, 0, BuiltFanout, BuiltMesh, 0.4, 0, false},
	{"and half the RFQs naming no region (sent to every group)", 8, 0.05, false, false, AttestShard, attest.DefaultBeatEvery, 0, BuiltFanout, BuiltMesh, 0.4, 0.7, false},
	{"what-if, from as built: 16 lots by peer-ID hash, each RFQ on the 2 lots its renter picks", 16, 0.05, false, false, AttestShard, attest.DefaultBeatEvery, 0, BuiltFanout, BuiltMesh, 0, 2.0 / 16, false},
	{"32 lots, each RFQ on 2 (as built since step 3 of lots, 2026-12-06: auction.LotsFor puts 20,000 providers in 32)", 32, 0.05, false, false, AttestShard, attest.DefaultBeatEvery, 0, BuiltFanout, BuiltMesh, 0, 2.0 / 32, false},
	{"32 lots, each RFQ on 1", 32, 0.05, false, false, AttestShard, attest.DefaultBeatEvery, 0, BuiltFanout, BuiltMesh, 0, 1.0 / 32, false},
	{"16 lots, each RFQ on 2, and no heartbeat gossip", 16, 0.05, false, false, HeartbeatsNone, attest.DefaultBeatEvery, 0, BuiltFanout, BuiltMesh, 0, 2.0 / 16, false},
}

// WhatIfs evaluates WhatIfList at 100,000 providers and 100 RFQs/s.
func WhatIfs() ([]Row, error) {
	var out []Row
	for _, w := range WhatIfList {
		p, err := DefaultParams(100_000, 100)
		if err != nil {
			return nil, err
		}
		p.RegionGroups, p.CPUShare, p.GPUHostsOnCPU, p.ChangesEverywhere = w.RegionGroups, w.CPUShare, w.GPUHostsOnCPU, w.ChangesEverywhere
		p.Heartbeats, p.HeartbeatEvery, p.DigestRefresh, p.Gossip, p.Mesh = w.Heartbeats, w.HeartbeatEvery, w.DigestRefresh, w.Gossip, w.Mesh
		p.GroupShare, p.GroupRFQShare = w.GroupShare, w.GroupRFQShare
		p.Lots = false // each row says how it splits a shard
		if w.Signed {
			p.Calibration = p.Calibration.Signed()
		}
		r, err := Model(p)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// FormatWhatIfs renders WhatIfs' rows, each named by its WhatIfList entry.
func FormatWhatIfs(rows []Row) string {
	var b strings.Builder
	b.WriteString("| change (cumulative) | largest shard | digests/s on it | attest msgs/s | RFQ kB/s | digest kB/s | attest kB/s | CPU shard kB/s | fixed control kB/s | **provider in kB/s** | out kB/s |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for i, r := range rows {
		name := ""
		if i < len(WhatIfList) {
			name = WhatIfList[i].Name
		}
		fmt.Fprintf(&b, "| %s | %d | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | **%.1f** | %.1f |\n",
			name, r.ShardProviders, r.DigestsPerSec, r.HeartbeatsPerSec, r.RFQKBps, r.DigestKBps, r.AttestKBps, r.CPUKBps, r.FixedControlKBps, r.ProviderKBps, r.OutKBps)
	}
	return b.String()
}
