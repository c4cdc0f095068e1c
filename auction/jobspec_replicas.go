package auction

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// MaxReplicas bounds `replicas`: each replica is an auction, a lease and
// a payment stream the renter runs, and for a batch job one more output it
// downloads and compares.
const MaxReplicas = 8

// ReplicaCount is how many distinct providers run the job at once: for a
// batch job, independent runs whose outputs must agree (verification);
// for a service, serving replicas behind the renter's one endpoint. An
// unset `replicas` is 1.
//
// Replicas are the renter's business, not the provider's: the field is not
// in the canonical spec, so every replica runs the same spec CID, which is
// what lets two signed `finished` entries of the same run be compared.
func (s *JobSpec) ReplicaCount() int {
	if s.Replicas < 1 {
		return 1
	}
	return s.Replicas
}

func (s *JobSpec) setReplicas(v string) error {
	if !jobIsDigits(v, 1, 3) {
		return fmt.Errorf("takes a whole number from 1 to %d, got %q", MaxReplicas, v)
	}
	s.Replicas, _ = strconv.Atoi(v)
	return nil
}

// resolveReplicas checks `replicas`; it adds nothing to the canonical spec.
func (s *JobSpec) resolveReplicas(sp *specProblems) {
	if s.Replicas < 0 || s.Replicas > MaxReplicas {
		sp.add("replicas", "%d out of range 1..%d", s.Replicas, MaxReplicas)
	}
}

// `replica_regions` values: any (the default) or distinct, every replica
// in another country (independent operators and jurisdictions as well as
// independent hardware).
const (
	ReplicaRegionsAny      = "any"
	ReplicaRegionsDistinct = "distinct"
)

// ReplicaRules are the rules the spec sets for placing its replicas
// (ReplicaConflict).
func (s *JobSpec) ReplicaRules() ReplicaRules {
	return ReplicaRules{DistinctRegions: strings.EqualFold(s.ReplicaRegions, ReplicaRegionsDistinct)}
}

// resolveReplicaRegions checks `replica_regions`: distinct needs replicas
// to place (a batch job's, or a service's, `max_replicas` included) and
// at least as many countries allowed by `region` as replicas. It adds
// nothing to the canonical spec.
func (s *JobSpec) resolveReplicaRegions(sp *specProblems) {
	switch strings.ToLower(s.ReplicaRegions) {
	case "", ReplicaRegionsAny:
		return
	case ReplicaRegionsDistinct:
	default:
		sp.add("replica_regions", "%q is not distinct (every replica in another country) or any", s.ReplicaRegions)
		return
	}
	n := s.ReplicaCount()
	if _, hi := s.ReplicaBounds(); n < 2 && hi < 2 {
		sp.add("replica_regions", "distinct puts each replica in another country; set replicas: 2 or more")
	}
	var countries []string
	for _, r := range s.Region {
		if r = strings.ToLower(r); !slices.Contains(countries, r) {
			countries = append(countries, r)
		}
	}
	if len(countries) > 0 && len(countries) < n {
		sp.add("replica_regions", "distinct needs a country per replica: replicas: %d, and region allows only %s",
			n, strings.Join(countries, ", "))
	}
}
