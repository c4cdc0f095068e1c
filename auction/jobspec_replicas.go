package auction

import (
	"fmt"
	"strconv"
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
