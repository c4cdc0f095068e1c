package auction

import (
	"reflect"
	"time"
)

// DigestRefreshBudget is how many refreshes a second (digests re-gossiped
// unchanged) a shard's providers together may cost each node of the
// shard: a shard of n providers that each refreshed every minute would
// cost every one of its nodes n/60 digests a second for nothing but
// liveness, 333 a second at 20,000 providers.
const DigestRefreshBudget = 2.0

// DigestRefresh is how often a provider re-gossips its unchanged digest
// (docs/protocol.md §6.4): base (a minute, or half its record's
// republish interval if that is shorter) in a shard of up to
// DigestRefreshBudget × base providers, longer in a larger one so its
// refreshes stay within the budget, and never longer than most (a third
// of the digest's lifetime, so that two lost refreshes do not let it
// expire). shardProviders is the largest of the provider's shards as its
// market view holds it. The longer the refresh, the longer a provider
// that crashed stays in market views (three refreshes); one that stops
// on purpose withdraws its digest at once either way.
func DigestRefresh(shardProviders int, base, most time.Duration) time.Duration {
	d := time.Duration(float64(shardProviders) / DigestRefreshBudget * float64(time.Second))
	return max(base, min(d, most))
}

// DigestChangedFor reports whether cur tells the nodes of shard s
// something prev did not: any field but the sequence numbers and dates,
// and of the models only those of s's family (none on the CPU shard). A
// provider re-gossips a digest on a shard it did not change for only at
// the shard's refresh: a GPU hold or lease on an A10 host says nothing to
// the CPU shard's nodes, where the host may also offer a CPU share, nor
// to its H100 shard's. nil prev: changed.
func DigestChangedFor(prev, cur *Digest, s Shard) bool {
	if prev == nil || cur == nil {
		return prev != cur
	}
	return !reflect.DeepEqual(shardFacts(prev, s), shardFacts(cur, s))
}

// shardFacts is d as shard s's nodes see it: no sequence numbers or
// dates, only the models of s's family, and a firmly held GPU counted as
// the free GPU it is again within seconds (provider.firm_hold, 2 s). A
// hold or its end alone is not news worth a digest to the whole shard: a
// bid of a provider with a paid receipt from the renter holds GPUs, so in
// a market of renters with receipts each such bid cost two digests to
// every node of the shard (the hold, then its end), five digests a job at
// 100 nodes where the model counted 1.5 (docs/benchmarks.md, issue 26).
// The holds still go out in the next digest sent for another reason, and
// the provider itself never offers a held GPU to another RFQ.
func shardFacts(d *Digest, s Shard) Digest {
	out := *d
	out.Seq, out.CapSeq, out.IssuedAtMs, out.ExpiresAtMs = 0, 0, 0, 0
	out.Models = nil
	if f := s.Family(); f != "" {
		for _, m := range d.Models {
			if GPUFamily(m.Model) == f {
				m.Free, m.Held = m.Free+m.Held, 0
				out.Models = append(out.Models, m)
			}
		}
	}
	return out
}
