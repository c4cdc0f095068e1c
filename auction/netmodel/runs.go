package netmodel

import (
	"fmt"
	"strings"
	"time"
)

// Run is what one BenchmarkAuction run measured of gossip while its jobs
// ran, per provider (the benchmark's "gossip cost" line;
// docs/benchmarks.md, issue 26): providers on the A10 shard and the CPU
// shard, jobs one at a time plus gossip probes on the A10 RFQ topic.
type Run struct {
	Nodes, Providers int
	// JobsPerSec are the real auctions; RFQsPerSec on the shard counts
	// the probes too (first copies received).
	JobsPerSec, RFQsPerSec float64
	// DigestsPerSec on the A10 shard and AttestPerSec on the attest topic
	// (first copies received).
	DigestsPerSec, AttestPerSec float64
	// Copies received per RFQ and per digest.
	RFQCopies, DigestCopies float64
	// Bytes per copy received (payload and gossip envelope) per kind.
	RFQBytes, DigestBytes, AttestBytes float64
	// ControlPerMsg is control bytes received per message (RFQ, digest
	// and attest).
	ControlPerMsg float64
	// InKBps is everything a provider received, kB/s.
	InKBps float64
	// The code the run measured: its digest refresh, its heartbeat
	// period (every telemetry window, gossiped network-wide, before
	// 2026-12-04; one per 10-minute slot on the shard's attestation
	// topic since), and whether a GPU change's digest also went to the
	// CPU shard (before 2026-12-04).
	DigestRefresh, BeatEvery time.Duration
	ChangesToCPU             bool
}

// BenchmarkRuns are the runs the calibration is fitted to (the first) and
// checked against. Only runs whose network formed and whose jobs ran are
// here: at 200 nodes on two cores it did not form (docs/benchmarks.md).
var BenchmarkRuns = []Run{
	{Nodes: 50, Providers: 48, JobsPerSec: 0.40, RFQsPerSec: 1.99, DigestsPerSec: 1.09, AttestPerSec: 1.27,
		RFQCopies: 7.79, DigestCopies: 7.38, RFQBytes: 776, DigestBytes: 688, AttestBytes: 3450, ControlPerMsg: 1507, InKBps: 63.25,
		DigestRefresh: 5 * time.Minute, BeatEvery: time.Minute, ChangesToCPU: true},
}

// Predicted is the model's account of a Run.
type Predicted struct {
	Copies, DigestsPerSec, AttestPerSec, InKBps float64
}

// PredictRun is the model of a run's network: its providers on one GPU
// shard and the CPU shard, its job and RFQ rates, the measured
// calibration, and the run's own message sizes.
func PredictRun(r Run) (Predicted, error) {
	if r.Providers <= 0 {
		return Predicted{}, fmt.Errorf("netmodel.PredictRun: %d providers", r.Providers)
	}
	c := MeasuredCalibration
	p := Predicted{Copies: c.Copies}
	if r.DigestRefresh <= 0 || r.BeatEvery <= 0 {
		return Predicted{}, fmt.Errorf("netmodel.PredictRun: %d nodes: no digest refresh or heartbeat period", r.Nodes)
	}
	refreshes := float64(r.Providers) / r.DigestRefresh.Seconds()
	p.DigestsPerSec = refreshes + c.DigestsPerRFQ*r.JobsPerSec
	cpuDigests := refreshes // the CPU shard
	if r.ChangesToCPU {
		cpuDigests = p.DigestsPerSec
	}
	p.AttestPerSec = float64(r.Providers)/r.BeatEvery.Seconds() + c.AttestPerRFQ*r.JobsPerSec
	perDigest := c.Copies*r.DigestBytes + c.ControlPerMsg
	in := r.RFQsPerSec*(c.Copies*r.RFQBytes+c.ControlPerMsg) +
		(p.DigestsPerSec+cpuDigests)*perDigest + // the A10 shard and the CPU shard
		p.AttestPerSec*(c.Copies*r.AttestBytes+c.ControlPerMsg)
	p.InKBps = in / 1000
	return p, nil
}

// FormatRunTable renders the model against the runs as a Markdown table.
func FormatRunTable(runs []Run) string {
	var b strings.Builder
	b.WriteString("| nodes | jobs/s | RFQs/s on the shard | copies per RFQ: model / measured | per digest: measured | digests/s: model / measured | attest msgs/s: model / measured | provider in kB/s: model / measured |\n")
	b.WriteString("|---:|---:|---:|---|---|---|---|---|\n")
	for _, r := range runs {
		p, err := PredictRun(r)
		if err != nil {
			fmt.Fprintf(&b, "| %d | %v |\n", r.Nodes, err)
			continue
		}
		fmt.Fprintf(&b, "| %d | %.2f | %.2f | %.1f / %.2f | %.2f | %.2f / %.2f | %.2f / %.2f | %.1f / %.1f |\n",
			r.Nodes, r.JobsPerSec, r.RFQsPerSec, p.Copies, r.RFQCopies, r.DigestCopies, p.DigestsPerSec, r.DigestsPerSec,
			p.AttestPerSec, r.AttestPerSec, p.InKBps, r.InKBps)
	}
	return b.String()
}
