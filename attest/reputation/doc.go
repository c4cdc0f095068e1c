// Package reputation folds evidence about providers into a reliability
// score in 0..1 and a badge. It is local and recomputable: the node keeps
// the evidence (its own lease outcomes, receipts other renters gossip,
// heartbeat uptime it observed, verified fraud proofs) and calls [Fold]
// whenever it needs a fresh snapshot, for example to fill
// auction.MatchInput.Reputation. The package is pure: no I/O and no clock
// of its own (the caller passes now), and the result does not depend on the
// order of the evidence.
//
// # Why this model
//
// The markets we compete with get reliability wrong in ways users notice:
// Vast.ai's reliability formula is unpublished and hosts are warned that one
// outage can "permanently lower" it; Golem's score comes from one central
// auditor; Akash has no reliability score at all, only audit badges; Bacalhau
// merely avoids nodes that failed before. Here the formula is this package,
// every input is evidence a peer can check, and old evidence fades.
//
// # The model
//
// The score is the mean of a Beta distribution. The prior
// ([Config.Prior], the node's market.reliability_prior) enters as
// [Config.PriorStrength] pseudo-observations, so a provider with no evidence
// scores exactly the prior and converges to its observed success rate as
// evidence accumulates:
//
//	score = (Prior*PriorStrength + S) / (PriorStrength + S + F)
//
// S and F are the weighted, decayed successes and failures. Each piece of
// evidence adds
//
//	source weight * 2^(-age/HalfLife) * log2(1 + min(GPU-hours, MaxLeaseGPUHours))
//
// to S or F. The source weight is [Config.OwnWeight] for outcomes of leases
// this node held and [Config.GossipWeight] (lower) for receipts others
// gossip. log2(1+h) makes a one-GPU-hour lease count as one observation, a
// 24 GPU-hour lease as 4.6 and a one-minute lease as 0.02: a long job is
// more evidence than a short one, but a provider cannot bank a month of
// reputation on one big lease, and a failure on a big lease weighs more. The
// decay makes evidence half as heavy every HalfLife, so the score drifts back
// to the prior when a provider goes quiet and an old outage stops mattering.
//
// What each lease state counts as is [Config.Effects]. By default completed
// is a success; failed, expired and provider-unreachable are failures;
// cancelled by the renter is neutral (it says nothing about the provider).
// Preempted is neutral too: preemption with notice is the bronze contract,
// so it must not cost the provider, but it does not show that the provider
// finishes work either, and counting it as a success would let a provider
// farm score by taking bronze leases and preempting them at once. A
// preemption that broke the contract (notice not honoured) should be
// recorded by the node as failed.
//
// Gossiped receipts count once per (provider, lease), never when this node
// has its own outcome for the lease, and never when the renter is the
// provider itself. One renter's receipts about one provider are ranked by
// weight and the k-th counts GossipDiminish^k times as much, so a single
// renter identity can add at most 1/(1-GossipDiminish) times its heaviest
// receipt. The fold cannot tell Sybil renters apart; which renters' receipts
// to admit at all is the caller's decision.
//
// Heartbeat uptime observed over a window adds the seen/expected ratio to S
// and the rest to F, weighted by [Config.UptimeWeight] per [Config.UptimeUnit]
// of window, with the decay integrated over the window. In steady state all
// uptime together weighs about UptimeWeight*HalfLife/(ln2*UptimeUnit)
// observations (2 with the defaults): a real but minor signal next to leases.
//
// A verified fraud proof sets the score to 0 and the badge to [BadgeRevoked]
// for good, or, with [Config.FraudAmnesty], until the amnesty has passed
// since the latest proof; the provider then starts again from the prior and
// evidence older than the proof is ignored.
//
// # Badges
//
// A [Badge] combines score and volume: the decayed GPU-hours of successful
// leases ([Result.EffectiveGPUHours]). Gold-tier work needs [BadgeGold]
// (by default 50 decayed GPU-hours at score 0.95 or more); silver and bronze
// work need no badge, so a new provider can always win work and earn one.
// See [Badge.Allows].
package reputation
