package auction

import (
	"cmp"
	"fmt"
	"slices"
)

// Replicated batch jobs. A spec with `replicas: N` (N > 1) runs the same
// spec CID on N independent providers at once, and the renter compares
// the N signed outputs: agreement completes the job, a disagreement on a
// deterministic job is proven by re-running it (attest.WrongResultProof),
// any other disagreement is recorded against the providers. Replicas are
// only worth their price when they are independent: two peer IDs on one
// machine (one hardware fingerprint) would run one computation and
// agree with themselves.

// Replica conflict codes: why a bid cannot run another replica of a job.
const (
	ReplicaSamePeer        = "same_peer"        // the provider already runs a replica
	ReplicaSameFingerprint = "same_fingerprint" // another key on the same machine runs one
	ReplicaSameRegion      = "same_region"      // distinct regions: a replica runs in its country
	ReplicaPool            = "pool"             // the bid alone cannot hold the job's GPUs
)

// ReplicaHost is what makes a replica independent of the others: the
// provider's peer ID, the hardware fingerprint its capacity record names
// (fingerprint_id: one machine under two keys is one host) and the
// country its bid names (which its record must name too: BidBacking).
type ReplicaHost struct {
	Peer        string
	Fingerprint string
	Region      string
}

// ReplicaRules say how independent a job's replicas must be: always on
// distinct keys and hardware; with DistinctRegions (`replica_regions:
// distinct`) in distinct countries too, so independent operators under
// other jurisdictions run them.
type ReplicaRules struct {
	DistinctRegions bool
}

// ReplicaConflict says why candidate cannot run another replica beside
// those on chosen under rules, as one of the Replica* codes with the
// reason in words; both empty when it can. Hosts are told apart by
// hardware fingerprint where both name one. A GPU bid always does
// (BidBacking refuses one whose record names none); a CPU-only host
// attests no GPU fingerprint, so CPU-only replicas are told apart by peer
// ID alone, a weaker guarantee the renter's job history states. Under
// distinct regions a candidate without a region is refused (nothing shows
// it elsewhere); a chosen host without one (recorded before regions were)
// is compared by key and hardware alone.
func ReplicaConflict(rules ReplicaRules, chosen []ReplicaHost, candidate ReplicaHost) (code, reason string) {
	if rules.DistinctRegions && candidate.Region == "" {
		return ReplicaSameRegion, "names no region, and the replicas must be in distinct regions"
	}
	for _, c := range chosen {
		switch {
		case c.Peer == candidate.Peer:
			return ReplicaSamePeer, "already chosen for a replica"
		case c.Fingerprint != "" && c.Fingerprint == candidate.Fingerprint:
			return ReplicaSameFingerprint, fmt.Sprintf("same hardware fingerprint as provider %s, chosen for a replica", c.Peer)
		case rules.DistinctRegions && c.Region != "" && c.Region == candidate.Region:
			return ReplicaSameRegion, fmt.Sprintf("in region %s, as provider %s, chosen for a replica (replica_regions: distinct)", c.Region, c.Peer)
		}
	}
	return "", ""
}

// ReplicaBids keeps the bids that may run the next replica of a job that
// needs gpus GPUs: a bid that holds them alone (a replica is one host, so
// its output is one signed CID to compare), from a host in no conflict
// with chosen (ReplicaConflict). host maps a provider to its ReplicaHost
// (its fingerprint from its capacity record). It returns the kept bids'
// indexes and, per refused provider, the reason in words.
func ReplicaBids(bids []*Bid, gpus uint32, rules ReplicaRules, chosen []ReplicaHost, host func(provider string) ReplicaHost) (kept []int, refused map[string]string) {
	refused = map[string]string{}
	for i, b := range bids {
		if b == nil {
			continue
		}
		if uint32(len(b.GPUs)) < gpus {
			refused[b.Provider] = fmt.Sprintf("%s: offers %d of the %d GPUs and a replica runs on one host", ReplicaPool, len(b.GPUs), gpus)
			continue
		}
		if code, why := ReplicaConflict(rules, chosen, host(b.Provider)); code != "" {
			refused[b.Provider] = code + ": " + why
			continue
		}
		kept = append(kept, i)
	}
	return kept, refused
}

// ReplicaGroup is the replicas that returned one output CID.
type ReplicaGroup struct {
	Output string
	// Members index the outputs slice given to GroupOutputs, in order.
	Members []int
}

// GroupOutputs groups replica outputs by CID, the largest group first
// (the candidate answer: the majority when there is one), ties in the
// order their first member came. One group means the replicas agree.
func GroupOutputs(outputs []string) []ReplicaGroup {
	var groups []ReplicaGroup
	at := map[string]int{}
	for i, o := range outputs {
		g, ok := at[o]
		if !ok {
			g = len(groups)
			at[o] = g
			groups = append(groups, ReplicaGroup{Output: o})
		}
		groups[g].Members = append(groups[g].Members, i)
	}
	slices.SortStableFunc(groups, func(a, b ReplicaGroup) int { return cmp.Compare(len(b.Members), len(a.Members)) })
	return groups
}

// Majority reports whether the first of groups (GroupOutputs) holds more
// than half of the replicas.
func Majority(groups []ReplicaGroup) bool {
	total := 0
	for _, g := range groups {
		total += len(g.Members)
	}
	return len(groups) > 0 && 2*len(groups[0].Members) > total
}

// PlaceReplicas picks up to n hosts for the replicas of a job from
// ranked, the feasible bids' hosts best first (the matcher's winner, then
// its backups): each the best one in no conflict under rules with chosen
// (the hosts of the job's other replicas, and of a lost one auctioned
// again) nor with those picked before it. It returns the picked indexes
// into ranked and, when fewer than n could be placed, why the others were
// passed over, in words.
func PlaceReplicas(n int, rules ReplicaRules, chosen, ranked []ReplicaHost) (picked []int, passed []string) {
	chosen = slices.Clip(chosen)
	for i, h := range ranked {
		if len(picked) == n {
			break
		}
		if code, why := ReplicaConflict(rules, chosen, h); code != "" {
			passed = append(passed, fmt.Sprintf("%s: %s", h.Peer, why))
			continue
		}
		picked, chosen = append(picked, i), append(chosen, h)
	}
	if len(picked) == n {
		passed = nil
	}
	return picked, passed
}

// Regions lists the distinct regions of hosts, sorted (a host without one
// is left out): where the bids for a job in distinct regions came from.
func Regions(hosts []ReplicaHost) []string {
	var out []string
	for _, h := range hosts {
		if h.Region != "" && !slices.Contains(out, h.Region) {
			out = append(out, h.Region)
		}
	}
	slices.Sort(out)
	return out
}
