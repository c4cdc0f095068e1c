package auction

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestGPUFamily(t *testing.T) {
	for _, tc := range []struct{ slug, want string }{
		{"h100-80gb", "h100"},
		{"h100-94gb", "h100"},
		{"h100-nvl-94gb", "h100-nvl"},
		{"rtx-4090-24gb", "rtx-4090"},
		{"t4-16gb", "t4"},
		{"l40s-48gb", "l40s"},
		{"gpu-16gb", "gpu"},
		{"h100", "h100"},               // already a family
		{"rtx-4090", "rtx-4090"},       // already a family
		{"a100-gb", "a100-gb"},         // no digits: not a memory segment
		{"x-1234567gb", "x-1234567gb"}, // 7 digits: not a memory label
		{"80gb", "80gb"},               // nothing before the memory segment
	} {
		if got := GPUFamily(tc.slug); got != tc.want {
			t.Errorf("GPUFamily(%q) = %q, want %q", tc.slug, got, tc.want)
		}
	}
}

// Every slug that a pattern matches lies on a shard the pattern maps to:
// the property that lets a renter route without asking anyone.
func TestRFQShardsCoverMatchingModels(t *testing.T) {
	slugs := []string{"h100-80gb", "h100-94gb", "h100-nvl-94gb", "a100-40gb", "a100-80gb", "rtx-4090-24gb", "rtx-3090-24gb", "t4-16gb"}
	var known []Shard
	for _, s := range slugs {
		known = append(known, GPUShard(GPUFamily(s)))
	}
	for _, pat := range []string{"h100", "h100-80gb", "h100-nvl", "a100", "rtx", "rtx-4090", "t4-16gb", "l4"} {
		r := &RFQ{Resources: Resources{GPUs: 1, Models: []string{pat}}}
		shards := RFQShards(r, known)
		for _, slug := range slugs {
			if ModelMatches(pat, slug) && !slices.Contains(shards, GPUShard(GPUFamily(slug))) {
				t.Errorf("pattern %q: shards %v miss %q", pat, shards, slug)
			}
		}
		for _, s := range shards {
			if !RFQOnShard(r, s) {
				t.Errorf("pattern %q routed to %s, which RFQOnShard refuses", pat, s)
			}
		}
	}
}

func TestRFQShards(t *testing.T) {
	known := []Shard{GPUShard("a100"), GPUShard("h100-nvl"), GPUShard("h100"), ShardCPU}
	for _, tc := range []struct {
		name string
		res  Resources
		want []Shard
	}{
		{"cpu only", Resources{}, []Shard{ShardCPU}},
		{"one family", Resources{GPUs: 2, Models: []string{"a100-80gb"}}, []Shard{"gpu/a100"}},
		{"family and extension", Resources{GPUs: 1, Models: []string{"h100"}}, []Shard{"gpu/h100", "gpu/h100-nvl"}},
		{"two classes", Resources{GPUs: 1, Models: []string{"a100", "h100-80gb"}}, []Shard{"gpu/a100", "gpu/h100"}},
		{"unknown family still routed", Resources{GPUs: 1, Models: []string{"l4"}}, []Shard{"gpu/l4"}},
		{"no constraint: known gpu shards in order", Resources{GPUs: 1}, []Shard{"gpu/a100", "gpu/h100-nvl", "gpu/h100"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := RFQShards(&RFQ{Resources: tc.res}, known)
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRFQShardsBounded(t *testing.T) {
	var models []string
	var known []Shard
	for i := range MaxRFQModels {
		f := "x" + strings.Repeat("y", i)
		models = append(models, f)
		known = append(known, GPUShard(f))
	}
	if got := RFQShards(&RFQ{Resources: Resources{GPUs: 1, Models: models}}, known); len(got) != MaxShardsPerRFQ {
		t.Errorf("%d shards, want %d", len(got), MaxShardsPerRFQ)
	}
	if got := RFQShards(&RFQ{Resources: Resources{GPUs: 1}}, known); len(got) != MaxShardsPerRFQ {
		t.Errorf("unconstrained: %d shards, want %d", len(got), MaxShardsPerRFQ)
	}
}

func TestRFQOnShard(t *testing.T) {
	for _, tc := range []struct {
		name  string
		res   Resources
		shard Shard
		want  bool
	}{
		{"cpu job on cpu", Resources{}, ShardCPU, true},
		{"cpu job on gpu shard", Resources{}, "gpu/t4", false},
		{"gpu job on cpu", Resources{GPUs: 1}, ShardCPU, false},
		{"unconstrained on any gpu shard", Resources{GPUs: 1}, "gpu/t4", true},
		{"h100 job on t4", Resources{GPUs: 1, Models: []string{"h100"}}, "gpu/t4", false},
		{"h100 job on h100-nvl", Resources{GPUs: 1, Models: []string{"h100"}}, "gpu/h100-nvl", true},
		{"h100-80gb job on h100-nvl", Resources{GPUs: 1, Models: []string{"h100-80gb"}}, "gpu/h100-nvl", false},
		{"malformed shard", Resources{GPUs: 1}, "gpu/", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := RFQOnShard(&RFQ{Resources: tc.res}, tc.shard); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestProviderShards(t *testing.T) {
	c := fixtureCapacity(t, 2) // two h100-80gb, docker and wasm
	c.GPUs = append(c.GPUs, GPU{Index: 2, UUID: "u3", Model: "a100-40gb"})
	c.CPU = &CPUOffer{Cores: 4, RAMMiB: 8192, FreeCores: 4, FreeRAMMiB: 8192, FloorMicro: 20_000}
	if got, want := ProviderShards(c), []Shard{"gpu/h100", "gpu/a100", ShardCPU}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	c.CPU = nil
	c.GPUs = nil
	for i := range 20 {
		c.GPUs = append(c.GPUs, GPU{Index: uint32(i), Model: "m" + strings.Repeat("x", i) + "-8gb"})
	}
	got := ProviderShards(c)
	topics := 0
	for _, s := range append(got, ShardCPU) {
		topics += max(len(ProviderShardTopics("12D3KooWself", s, 1)), len(ProviderShardTopics("12D3KooWself", s, 8)))
	}
	if len(got) != MaxShardsPerNode || topics > MaxShardTopicsPerNode {
		t.Errorf("%d shards for 20 families, want %d", len(got), MaxShardsPerNode)
	}
}

// TestCPUShardIsForCPUShares: the CPU shard carries the providers that
// offer a CPU share, the only thing a CPU-only RFQ can lease; running
// wasm no longer puts a provider there. A digest on it by the earlier
// rule is told apart, so a validator drops it rather than rejects it.
func TestCPUShardIsForCPUShares(t *testing.T) {
	c := fixtureCapacity(t, 1) // one h100-80gb, docker and wasm, no CPU share
	share := &CPUOffer{Cores: 4, RAMMiB: 8192, FreeCores: 0, FreeRAMMiB: 0, FloorMicro: 20_000}
	gpuless := *c
	gpuless.GPUs = nil
	for _, tc := range []struct {
		name     string
		cap      Capacity
		cpu      *CPUOffer
		want     []Shard
		formerly bool
	}{
		{"GPUs and wasm, no share", *c, nil, []Shard{"gpu/h100"}, true},
		{"GPUs and a share (all of it leased)", *c, share, []Shard{"gpu/h100", ShardCPU}, false},
		{"no GPU, wasm, no share", gpuless, nil, []Shard{}, true},
		{"no GPU, a share", gpuless, share, []Shard{ShardCPU}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := tc.cap
			rec.CPU = tc.cpu
			if got := ProviderShards(&rec); !slices.Equal(got, tc.want) {
				t.Errorf("record's shards %v, want %v", got, tc.want)
			}
			d, err := NewDigest(DigestInput{Capacity: &rec, Seq: 1, Now: fixedNow})
			if err != nil {
				t.Fatal(err)
			}
			if got := d.Shards(); !slices.Equal(got, tc.want) {
				t.Errorf("digest's shards %v, want %v", got, tc.want)
			}
			if got := d.FormerlyOnShard(ShardCPU); got != tc.formerly {
				t.Errorf("FormerlyOnShard(cpu) = %v, want %v", got, tc.formerly)
			}
			if d.FormerlyOnShard("gpu/h100") || d.FormerlyOnShard("gpu/a100") {
				t.Error("FormerlyOnShard is true of a GPU shard")
			}
		})
	}
	docker := gpuless
	docker.Runtimes = []string{RuntimeDocker}
	if d, err := NewDigest(DigestInput{Capacity: &docker, Seq: 1, Now: fixedNow}); err != nil || d.FormerlyOnShard(ShardCPU) {
		t.Errorf("a docker-only provider without a share was never on the CPU shard (%v)", err)
	}
}

func TestParseShardTopic(t *testing.T) {
	for _, tc := range []struct {
		topic string
		want  ShardTopic
		ok    bool
	}{
		{"idlegrid/rfq/2/gpu/h100", ShardTopic{Kind: ShardTopicRFQ, Shard: "gpu/h100"}, true},
		{"idlegrid/rfq/2/cpu", ShardTopic{Kind: ShardTopicRFQ, Shard: ShardCPU}, true},
		{"idlegrid/digest/1/gpu/rtx-4090", ShardTopic{Kind: ShardTopicDigest, Shard: "gpu/rtx-4090"}, true},
		{"idlegrid/digest/1/cpu", ShardTopic{Kind: ShardTopicDigest, Shard: ShardCPU}, true},
		{"idlegrid/attest/1/gpu/a10", ShardTopic{Kind: ShardTopicAttest, Shard: "gpu/a10"}, true},
		{"idlegrid/attest/1/cpu", ShardTopic{Kind: ShardTopicAttest, Shard: ShardCPU}, true},
		{"idlegrid/beat/1/cpu", ShardTopic{}, false},
		{"idlegrid/attest/1", ShardTopic{}, false}, // the network-wide topic
		{"idlegrid/attest/1/", ShardTopic{}, false},
		{"idlegrid/rfq/1", ShardTopic{}, false},
		{"idlegrid/rfq/2/", ShardTopic{}, false},
		{"idlegrid/rfq/2/gpu/h100-80gb", ShardTopic{}, false}, // a model, not its family: one name per shard
		{"idlegrid/rfq/2/gpu/H100", ShardTopic{}, false},
		{"idlegrid/rfq/2/gpu/h100/x", ShardTopic{}, false},
		{"idlegrid/rfq/2/tpu", ShardTopic{}, false},
		{"idlegrid/rfq/3/cpu", ShardTopic{}, false},
		{"idlegrid/rfq/2/gpu/" + strings.Repeat("a", MaxModelLen+1), ShardTopic{}, false},
		// Lot topics (§3.6).
		{"idlegrid/rfq/2/gpu/h100/lot-3-of-32", ShardTopic{Kind: ShardTopicRFQ, Shard: "gpu/h100", Lot: 3, Lots: 32}, true},
		{"idlegrid/digest/1/cpu/lot-0-of-2", ShardTopic{Kind: ShardTopicDigest, Shard: ShardCPU, Lot: 0, Lots: 2}, true},
		{"idlegrid/attest/1/gpu/a10/lot-1023-of-1024", ShardTopic{Kind: ShardTopicAttest, Shard: "gpu/a10", Lot: 1023, Lots: 1024}, true},
		{"idlegrid/rfq/2/gpu/lot-1-of-2", ShardTopic{Kind: ShardTopicRFQ, Shard: "gpu/lot-1-of-2"}, true}, // a family so named
		{"idlegrid/rfq/2/gpu/h100/lot-0-of-1", ShardTopic{}, false},                                       // one lot is the shard's own topic
		{"idlegrid/rfq/2/gpu/h100/lot-2-of-2", ShardTopic{}, false},                                       // no such lot
		{"idlegrid/rfq/2/gpu/h100/lot-1-of-3", ShardTopic{}, false},                                       // not a power of two
		{"idlegrid/rfq/2/gpu/h100/lot-1-of-2048", ShardTopic{}, false},                                    // over MaxLots
		{"idlegrid/rfq/2/gpu/h100/lot-01-of-2", ShardTopic{}, false},                                      // not canonical
		{"idlegrid/rfq/2/gpu/h100/lot-+1-of-2", ShardTopic{}, false},
		{"idlegrid/rfq/2/gpu/h100/lot-1-of-02", ShardTopic{}, false},
		{"idlegrid/rfq/2/gpu/h100/lot-1-of-2/lot-0-of-2", ShardTopic{}, false},
		{"idlegrid/rfq/2/gpu/h100/lot-1", ShardTopic{}, false},
		{"idlegrid/rfq/2/gpu/h100/lot-", ShardTopic{}, false},
		{"idlegrid/rfq/2/cpu/lot-1-of-2/", ShardTopic{}, false},
	} {
		t.Run(tc.topic, func(t *testing.T) {
			got, err := ParseShardTopic(tc.topic)
			if tc.ok != (err == nil) {
				t.Fatalf("err = %v, want ok=%v", err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrBadShardTopic) {
				t.Errorf("error %v does not wrap ErrBadShardTopic", err)
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			if tc.ok && got.Topic() != tc.topic {
				t.Errorf("topic does not round-trip: %q", got.Topic())
			}
		})
	}
}

func FuzzParseShardTopic(f *testing.F) {
	for _, s := range []string{"idlegrid/rfq/2/gpu/h100", "idlegrid/digest/1/cpu", "idlegrid/rfq/2/gpu/a-1gb", "idlegrid/rfq/1",
		"idlegrid/attest/1/gpu/h100/lot-3-of-32", "idlegrid/digest/1/cpu/lot-0-of-2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, topic string) {
		st, err := ParseShardTopic(topic)
		if err != nil {
			return
		}
		if back := st.Topic(); back != topic {
			t.Fatalf("%q parses to %+v, which names %q", topic, st, back)
		}
		if st.Lots != 0 && (!ValidLots(st.Lots) || st.Lot >= st.Lots) {
			t.Fatalf("%q parses to lot %d of %d", topic, st.Lot, st.Lots)
		}
	})
}

func TestBeatShards(t *testing.T) {
	for _, tc := range []struct{ served, want []Shard }{
		{[]Shard{"gpu/h100", "gpu/t4", ShardCPU}, []Shard{"gpu/h100", "gpu/t4"}},
		{[]Shard{ShardCPU}, []Shard{ShardCPU}},
		{[]Shard{"gpu/a10"}, []Shard{"gpu/a10"}},
		{nil, []Shard{}},
	} {
		if got := BeatShards(tc.served); !slices.Equal(got, tc.want) {
			t.Errorf("BeatShards(%v) = %v, want %v", tc.served, got, tc.want)
		}
	}
}

func TestModelShard(t *testing.T) {
	for _, tc := range []struct {
		model string
		want  Shard
		ok    bool
	}{
		{CPUModel, ShardCPU, true},
		{"a10-24gb", "gpu/a10", true},
		{"h100-nvl-94gb", "gpu/h100-nvl", true},
		{"h100", "gpu/h100", true},
		{"", "", false},
		{"H100-80GB", "", false},
		{"gpu/a10", "", false},
	} {
		got, ok := ModelShard(tc.model)
		if ok != tc.ok || ok && got != tc.want {
			t.Errorf("ModelShard(%q) = %q, %v; want %q, %v", tc.model, got, ok, tc.want, tc.ok)
		}
	}
}
