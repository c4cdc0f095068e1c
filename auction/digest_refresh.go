package auction

import "time"

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
