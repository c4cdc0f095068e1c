package auction

import (
	"errors"
	"strings"
	"testing"
)

func TestReplicasAreCheckedAndLeaveTheCIDAlone(t *testing.T) {
	base := func() *JobSpec {
		return &JobSpec{Module: "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy", MaxPrice: 1, Duration: "1m"}
	}
	one, err := base().CID()
	if err != nil {
		t.Fatal(err)
	}
	s := base()
	if err := s.Set("replicas", "3"); err != nil {
		t.Fatal(err)
	}
	if got := s.ReplicaCount(); got != 3 {
		t.Fatalf("ReplicaCount = %d, want 3", got)
	}
	three, err := s.CID()
	if err != nil {
		t.Fatal(err)
	}
	if three != one {
		t.Fatalf("replicas changed the spec CID: %s, want %s", three, one)
	}
	if got := base().ReplicaCount(); got != 1 {
		t.Fatalf("unset ReplicaCount = %d, want 1", got)
	}
	for _, v := range []string{"x", "-1", "1000"} {
		if err := base().Set("replicas", v); err == nil {
			t.Errorf("Set(replicas, %q) accepted", v)
		}
	}
	s = base()
	s.Replicas = MaxReplicas + 1
	err = s.Validate()
	if !errors.Is(err, ErrInvalidJobSpec) || !strings.Contains(err.Error(), "replicas") {
		t.Fatalf("Validate with %d replicas: %v", s.Replicas, err)
	}
}
