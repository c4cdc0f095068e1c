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

func TestReplicaRegionsAreCheckedAndLeaveTheCIDAlone(t *testing.T) {
	base := func() *JobSpec {
		return &JobSpec{Module: "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy", MaxPrice: 1, Duration: "1m", Replicas: 2}
	}
	plain, err := base().CID()
	if err != nil {
		t.Fatal(err)
	}
	s := base()
	if err := s.Set("replica-regions", "Distinct"); err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	if !s.ReplicaRules().DistinctRegions {
		t.Fatal("replica_regions: Distinct does not ask for distinct regions")
	}
	if cid, err := s.CID(); err != nil || cid != plain {
		t.Fatalf("replica_regions changed the spec CID: %s (%v), want %s", cid, err, plain)
	}
	if base().ReplicaRules().DistinctRegions {
		t.Fatal("distinct regions without replica_regions")
	}
	for _, tc := range []struct {
		name string
		edit func(*JobSpec)
		want string // "" for valid
	}{
		{"any", func(s *JobSpec) { s.ReplicaRegions = "any" }, ""},
		{"any on one replica", func(s *JobSpec) { s.ReplicaRegions, s.Replicas = "any", 1 }, ""},
		{"enough countries", func(s *JobSpec) { s.Region = []string{"de", "fr"} }, ""},
		{"unknown value", func(s *JobSpec) { s.ReplicaRegions = "different" }, `"different" is not distinct`},
		{"one replica", func(s *JobSpec) { s.Replicas = 1 }, "set replicas: 2 or more"},
		{"replicas unset", func(s *JobSpec) { s.Replicas = 0 }, "set replicas: 2 or more"},
		{"service", func(s *JobSpec) {
			s.Module, s.Image, s.Kind, s.Ports = "", "reg/img@sha256:"+strings.Repeat("a", 64), KindService, []int{8080}
		}, ""},
		{"service that scales to two", func(s *JobSpec) {
			s.Module, s.Image, s.Kind, s.Ports = "", "reg/img@sha256:"+strings.Repeat("a", 64), KindService, []int{8080}
			s.Replicas, s.ReplicasMax = 1, 2
		}, ""},
		{"service of one replica", func(s *JobSpec) {
			s.Module, s.Image, s.Kind, s.Ports = "", "reg/img@sha256:"+strings.Repeat("a", 64), KindService, []int{8080}
			s.Replicas = 1
		}, "set replicas: 2 or more"},
		{"too few countries", func(s *JobSpec) { s.Replicas, s.Region = 3, []string{"de", "DE", "fr"} }, "replicas: 3, and region allows only de, fr"},
	} {
		s := base()
		s.ReplicaRegions = ReplicaRegionsDistinct
		tc.edit(s)
		err := s.Validate()
		if tc.want == "" && err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
		if tc.want != "" && (!errors.Is(err, ErrInvalidJobSpec) || !strings.Contains(err.Error(), "replica_regions") || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: Validate = %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
	y, err := ParseJobSpec([]byte("module: bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy\nmax_price: 1\nduration: 1m\nreplicas: 2\nreplica_regions: distinct\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !y.ReplicaRules().DistinctRegions {
		t.Fatalf("parsed replica_regions %q does not ask for distinct regions", y.ReplicaRegions)
	}
}
