package auction

import (
	"slices"
	"strings"
	"testing"
)

func TestReplicaConflict(t *testing.T) {
	chosen := []ReplicaHost{{Peer: "A", Fingerprint: "fa"}, {Peer: "C"}}
	for _, tc := range []struct {
		name string
		c    ReplicaHost
		code string
	}{
		{"another host", ReplicaHost{Peer: "B", Fingerprint: "fb"}, ""},
		{"same key", ReplicaHost{Peer: "A", Fingerprint: "fx"}, ReplicaSamePeer},
		{"same machine under another key", ReplicaHost{Peer: "B", Fingerprint: "fa"}, ReplicaSameFingerprint},
		{"CPU-only host told apart by key", ReplicaHost{Peer: "D"}, ""},
		{"CPU-only host under a used key", ReplicaHost{Peer: "C"}, ReplicaSamePeer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, why := ReplicaConflict(ReplicaRules{}, chosen, tc.c)
			if code != tc.code || (code != "") != (why != "") {
				t.Fatalf("got %q (%q), want %q", code, why, tc.code)
			}
		})
	}
	if code, _ := ReplicaConflict(ReplicaRules{}, nil, ReplicaHost{Peer: "A", Fingerprint: "fa"}); code != "" {
		t.Fatalf("the first replica conflicts with nothing, got %q", code)
	}
}

func TestReplicaBids(t *testing.T) {
	fp := map[string]string{"A": "fa", "B": "fa", "C": "fc", "D": "fd"}
	host := func(p string) ReplicaHost { return ReplicaHost{Peer: p, Fingerprint: fp[p]} }
	bids := []*Bid{
		{Provider: "A", GPUs: []string{"a1", "a2"}},
		{Provider: "B", GPUs: []string{"b1", "b2"}}, // A's machine under another key
		nil,
		{Provider: "C", GPUs: []string{"c1"}}, // too small to hold the job alone
		{Provider: "D", GPUs: []string{"d1", "d2", "d3"}},
	}
	kept, refused := ReplicaBids(bids, 2, ReplicaRules{}, []ReplicaHost{host("A")}, host)
	if !slices.Equal(kept, []int{4}) {
		t.Fatalf("kept %v, want [4] (D)", kept)
	}
	for p, code := range map[string]string{"A": ReplicaSamePeer, "B": ReplicaSameFingerprint, "C": ReplicaPool} {
		if !strings.HasPrefix(refused[p], code+":") {
			t.Fatalf("%s refused %q, want %s", p, refused[p], code)
		}
	}
}

func TestPlaceReplicas(t *testing.T) {
	ranked := []ReplicaHost{
		{Peer: "A", Fingerprint: "f1"},
		{Peer: "B", Fingerprint: "f1"}, // same machine as A
		{Peer: "A", Fingerprint: "f1"}, // A again (a later bid)
		{Peer: "C", Fingerprint: "f2"},
		{Peer: "D", Fingerprint: "f3"},
	}
	picked, passed := PlaceReplicas(2, ReplicaRules{}, nil, ranked)
	if !slices.Equal(picked, []int{0, 3}) || passed != nil {
		t.Fatalf("2 of them: picked %v passed %v, want [0 3] and nothing passed over", picked, passed)
	}
	picked, _ = PlaceReplicas(3, ReplicaRules{}, nil, ranked)
	if !slices.Equal(picked, []int{0, 3, 4}) {
		t.Fatalf("3 of them: picked %v, want [0 3 4]", picked)
	}
	picked, passed = PlaceReplicas(4, ReplicaRules{}, nil, ranked)
	if len(picked) != 3 || len(passed) != 2 || !strings.Contains(passed[0], "B: same hardware fingerprint") {
		t.Fatalf("4 of them: picked %v passed %q, want 3 picked and B and A's repeat passed over", picked, passed)
	}
	// A lost replica auctioned again: independent of the replica kept (C)
	// and of the lost one's host (A, and B on A's machine).
	kept := []ReplicaHost{{Peer: "C", Fingerprint: "f2"}, {Peer: "A", Fingerprint: "f1"}}
	picked, passed = PlaceReplicas(1, ReplicaRules{}, kept, ranked)
	if !slices.Equal(picked, []int{4}) || passed != nil {
		t.Fatalf("1 beside C and A: picked %v passed %q, want [4] (D)", picked, passed)
	}
	picked, passed = PlaceReplicas(1, ReplicaRules{}, kept, ranked[:4])
	if len(picked) != 0 || len(passed) != 4 || !strings.Contains(passed[3], "C: already chosen") {
		t.Fatalf("1 beside C and A without D: picked %v passed %q, want none and every host passed over", picked, passed)
	}
}

// TestReplicasInDistinctRegions: under replica_regions: distinct a host
// in a country a chosen replica runs in conflicts, as does one that names
// no country; a chosen host without one is compared by key and hardware.
func TestReplicasInDistinctRegions(t *testing.T) {
	distinct := ReplicaRules{DistinctRegions: true}
	chosen := []ReplicaHost{{Peer: "A", Fingerprint: "fa", Region: "de"}, {Peer: "C", Fingerprint: "fc"}}
	for _, tc := range []struct {
		name string
		c    ReplicaHost
		code string
	}{
		{"another country", ReplicaHost{Peer: "B", Fingerprint: "fb", Region: "fr"}, ""},
		{"a chosen replica's country", ReplicaHost{Peer: "B", Fingerprint: "fb", Region: "de"}, ReplicaSameRegion},
		{"no country", ReplicaHost{Peer: "B", Fingerprint: "fb"}, ReplicaSameRegion},
		{"same machine, another country", ReplicaHost{Peer: "B", Fingerprint: "fa", Region: "fr"}, ReplicaSameFingerprint},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, why := ReplicaConflict(distinct, chosen, tc.c)
			if code != tc.code || (code != "") != (why != "") {
				t.Fatalf("got %q (%q), want %q", code, why, tc.code)
			}
		})
	}
	if code, _ := ReplicaConflict(ReplicaRules{}, chosen, ReplicaHost{Peer: "B", Fingerprint: "fb", Region: "de"}); code != "" {
		t.Fatalf("without distinct regions one country conflicts: %q", code)
	}

	ranked := []ReplicaHost{
		{Peer: "A", Fingerprint: "f1", Region: "de"},
		{Peer: "B", Fingerprint: "f2", Region: "de"},
		{Peer: "C", Fingerprint: "f3", Region: "fr"},
		{Peer: "D", Fingerprint: "f4", Region: "fr"},
		{Peer: "E", Fingerprint: "f5", Region: "nl"},
	}
	picked, passed := PlaceReplicas(3, distinct, nil, ranked)
	if !slices.Equal(picked, []int{0, 2, 4}) || passed != nil {
		t.Fatalf("3 in distinct regions: picked %v passed %q, want [0 2 4] (A de, C fr, E nl)", picked, passed)
	}
	picked, passed = PlaceReplicas(3, distinct, nil, ranked[:4])
	if len(picked) != 2 || len(passed) != 2 || !strings.Contains(passed[0], "B: in region de, as provider A") {
		t.Fatalf("3 in distinct regions from 2 countries: picked %v passed %q, want 2 and B and D passed over", picked, passed)
	}
	if got := Regions(ranked[:4]); !slices.Equal(got, []string{"de", "fr"}) {
		t.Fatalf("Regions = %v, want [de fr]", got)
	}
	// A lost replica in de auctioned again beside a kept one in fr: only nl.
	kept := []ReplicaHost{ranked[2], {Peer: "X", Fingerprint: "fx", Region: "de"}}
	picked, _ = PlaceReplicas(1, distinct, kept, ranked)
	if !slices.Equal(picked, []int{4}) {
		t.Fatalf("1 beside fr and de: picked %v, want [4] (E nl)", picked)
	}
}

func TestGroupOutputs(t *testing.T) {
	for _, tc := range []struct {
		outputs  []string
		want     []ReplicaGroup
		majority bool
	}{
		{[]string{"x", "x"}, []ReplicaGroup{{"x", []int{0, 1}}}, true},
		{[]string{"x", "y"}, []ReplicaGroup{{"x", []int{0}}, {"y", []int{1}}}, false},
		{[]string{"y", "x", "x"}, []ReplicaGroup{{"x", []int{1, 2}}, {"y", []int{0}}}, true},
		{[]string{"x", "y", "y", "x"}, []ReplicaGroup{{"x", []int{0, 3}}, {"y", []int{1, 2}}}, false},
		{[]string{"x", "y", "z"}, []ReplicaGroup{{"x", []int{0}}, {"y", []int{1}}, {"z", []int{2}}}, false},
	} {
		got := GroupOutputs(tc.outputs)
		if !slices.EqualFunc(got, tc.want, func(a, b ReplicaGroup) bool { return a.Output == b.Output && slices.Equal(a.Members, b.Members) }) {
			t.Fatalf("%v: got %v, want %v", tc.outputs, got, tc.want)
		}
		if Majority(got) != tc.majority {
			t.Fatalf("%v: majority %v, want %v", tc.outputs, !tc.majority, tc.majority)
		}
	}
}
