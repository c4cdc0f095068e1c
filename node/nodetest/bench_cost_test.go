package nodetest

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node"
	"github.com/idlegrid/idlegrid/p2p"
)

// gossipCost is what gossip has cost a cluster's providers so far, summed
// over them, from the p2p layer's gossip counters
// (idlegrid_gossip_copies_total, idlegrid_gossip_bytes_total and
// idlegrid_gossip_messages_total): what auction/netmodel is calibrated on.
type gossipCost struct {
	// from and at bound the interval (from is zero for a plain reading).
	from, at  time.Time
	providers int
	// Copies received on the shard's RFQ and digest topics: the first of
	// each message and the duplicates.
	rfqFirst, rfqDup, digestFirst, digestDup float64
	// Digests the providers published (each on its one shard).
	digestsPublished float64
	// Bytes received: payloads on the RFQ, digest and attest topics,
	// control, all; and all bytes sent.
	inRFQ, inDigest, inAttest, inControl, in, out float64
	// Messages on the attest topic (award summaries, receipts) and the
	// shard's attestation topic (heartbeats): first copies received.
	attestFirst, attestDup float64
	// inParts is every part's bytes received (topics, "other", control),
	// to show what the model leaves out.
	inParts map[string]float64
}

func readGossipCost(c *Cluster, shard auction.Shard) gossipCost {
	g := gossipCost{at: time.Now(), inParts: map[string]float64{}}
	rfq, digest, beat := shard.RFQTopic(), shard.DigestTopic(), shard.AttestTopic()
	attestTopic := func(t string) bool { return t == p2p.TopicAttest || t == beat }
	for _, m := range c.ByRole(node.RoleProvider) {
		g.providers++
		mfs, err := m.Registry.Gather()
		if err != nil {
			continue
		}
		for _, mf := range mfs {
			for _, met := range mf.GetMetric() {
				l := map[string]string{}
				for _, lp := range met.GetLabel() {
					l[lp.GetName()] = lp.GetValue()
				}
				v := met.GetCounter().GetValue()
				switch mf.GetName() {
				case "idlegrid_gossip_copies_total":
					switch {
					case l["topic"] == rfq && l["copy"] == "first":
						g.rfqFirst += v
					case l["topic"] == rfq:
						g.rfqDup += v
					case l["topic"] == digest && l["copy"] == "first":
						g.digestFirst += v
					case l["topic"] == digest:
						g.digestDup += v
					case attestTopic(l["topic"]) && l["copy"] == "first":
						g.attestFirst += v
					case attestTopic(l["topic"]):
						g.attestDup += v
					}
				case "idlegrid_gossip_messages_total":
					if l["topic"] == digest && l["direction"] == "published" {
						g.digestsPublished += v
					}
				case "idlegrid_gossip_bytes_total":
					if l["direction"] == "out" {
						g.out += v
						continue
					}
					g.in += v
					g.inParts[l["part"]] += v
					switch l["part"] {
					case rfq:
						g.inRFQ += v
					case digest:
						g.inDigest += v
					case p2p.TopicAttest, beat:
						g.inAttest += v
					case "control":
						g.inControl += v
					}
				}
			}
		}
	}
	return g
}

// since is the cost between an earlier reading and g.
func (g gossipCost) since(e gossipCost) gossipCost {
	return gossipCost{
		from: e.at, at: g.at, providers: g.providers,
		rfqFirst: g.rfqFirst - e.rfqFirst, rfqDup: g.rfqDup - e.rfqDup,
		digestFirst: g.digestFirst - e.digestFirst, digestDup: g.digestDup - e.digestDup,
		digestsPublished: g.digestsPublished - e.digestsPublished,
		inRFQ:            g.inRFQ - e.inRFQ, inDigest: g.inDigest - e.inDigest, inAttest: g.inAttest - e.inAttest,
		inControl: g.inControl - e.inControl, attestFirst: g.attestFirst - e.attestFirst, attestDup: g.attestDup - e.attestDup,
		in: g.in - e.in, out: g.out - e.out,
		inParts: func() map[string]float64 {
			d := map[string]float64{}
			for k, v := range g.inParts {
				d[k] = v - e.inParts[k]
			}
			return d
		}(),
	}
}

// costRates are a gossipCost over its interval, per provider.
type costRates struct {
	seconds float64
	// RFQs and digests on the shard, and attest messages, per second
	// (first copies per provider).
	rfqsPerSec, digestsPerSec, attestPerSec float64
	// Copies of each message a provider received.
	rfqCopies, digestCopies, attestCopies float64
	// Bytes per message: payload received per first copy, and control
	// (IHAVE, IWANT, GRAFT, PRUNE, subscriptions) per message of either
	// kind.
	rfqBytes, digestBytes, attestBytes, controlPerMsg float64
	// kB/s per provider received: RFQ, digest, attest and control; all in,
	// all out.
	inRFQKBps, inDigestKBps, inAttestKBps, inControlKBps, inKBps, outKBps float64
}

func (g gossipCost) rates() costRates {
	r := costRates{seconds: g.at.Sub(g.from).Seconds()}
	p := float64(max(g.providers, 1))
	if r.seconds <= 0 {
		return r
	}
	per := func(v float64) float64 { return v / p / r.seconds }
	r.rfqsPerSec, r.digestsPerSec, r.attestPerSec = per(g.rfqFirst), per(g.digestFirst), per(g.attestFirst)
	if g.rfqFirst > 0 {
		r.rfqCopies = (g.rfqFirst + g.rfqDup) / g.rfqFirst
		r.rfqBytes = g.inRFQ / (g.rfqFirst + g.rfqDup)
	}
	if g.digestFirst > 0 {
		r.digestCopies = (g.digestFirst + g.digestDup) / g.digestFirst
		r.digestBytes = g.inDigest / (g.digestFirst + g.digestDup)
	}
	if g.attestFirst > 0 {
		r.attestCopies = (g.attestFirst + g.attestDup) / g.attestFirst
		r.attestBytes = g.inAttest / (g.attestFirst + g.attestDup)
	}
	if msgs := g.rfqFirst + g.digestFirst + g.attestFirst; msgs > 0 {
		r.controlPerMsg = g.inControl / msgs
	}
	r.inRFQKBps, r.inDigestKBps, r.inAttestKBps, r.inControlKBps = per(g.inRFQ)/1000, per(g.inDigest)/1000, per(g.inAttest)/1000, per(g.inControl)/1000
	r.inKBps, r.outKBps = per(g.in)/1000, per(g.out)/1000
	return r
}

func (g gossipCost) report(b *testing.B) {
	r := g.rates()
	b.ReportMetric(r.rfqCopies, "rfq_copies")
	b.ReportMetric(r.digestCopies, "digest_copies")
	b.ReportMetric(r.digestsPerSec, "digests/s")
	b.ReportMetric(r.inKBps, "in_kB/s/provider")
	b.ReportMetric(r.outKBps, "out_kB/s/provider")
}

func (g gossipCost) String() string {
	r := g.rates()
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(g.inParts)) {
		if r.seconds > 0 {
			parts = append(parts, fmt.Sprintf("%s %.2f", k, g.inParts[k]/float64(max(g.providers, 1))/r.seconds/1000))
		}
	}
	return fmt.Sprintf("%d providers over %.1f s: %.2f RFQs/s and %.2f digests/s on the shard, %.2f attest messages/s; copies per RFQ %.2f, per digest %.2f, per attest message %.2f; "+
		"bytes per copy: RFQ %.0f, digest %.0f, attest %.0f; control %.0f B per message; per provider in: RFQ %.2f kB/s, digest %.2f kB/s, attest %.2f kB/s, control %.2f kB/s, all %.2f kB/s (by part, kB/s: %s); out %.2f kB/s; digests published %.0f",
		g.providers, r.seconds, r.rfqsPerSec, r.digestsPerSec, r.attestPerSec, r.rfqCopies, r.digestCopies, r.attestCopies, r.rfqBytes, r.digestBytes, r.attestBytes, r.controlPerMsg,
		r.inRFQKBps, r.inDigestKBps, r.inAttestKBps, r.inControlKBps, r.inKBps, strings.Join(parts, ", "), r.outKBps, g.digestsPublished)
}
