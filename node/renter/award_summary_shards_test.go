package renter

import (
	"slices"
	"testing"

	"github.com/idlegrid/idlegrid/auction"
)

// TestSummaryShards: a lease's award summary goes to its model's shard and
// to the RFQ's other shards that admit it (GPU shards for a GPU lease, the
// CPU shard for a CPU lease), each once; a model that names no shard sends
// it nowhere.
func TestSummaryShards(t *testing.T) {
	h100, nvl, t4, cpu := auction.GPUShard("h100"), auction.GPUShard("h100-nvl"), auction.GPUShard("t4"), auction.ShardCPU
	for _, c := range []struct {
		model string
		rfq   []auction.Shard
		want  []auction.Shard
	}{
		{"h100-nvl-94gb", []auction.Shard{h100, nvl}, []auction.Shard{nvl, h100}},
		{"h100-80gb", []auction.Shard{h100, t4}, []auction.Shard{h100, t4}},
		{"h100-80gb", nil, []auction.Shard{h100}},
		{"h100-80gb", []auction.Shard{cpu}, []auction.Shard{h100}},
		{auction.CPUModel, []auction.Shard{cpu}, []auction.Shard{cpu}},
		{auction.CPUModel, []auction.Shard{h100}, []auction.Shard{cpu}},
		{"", []auction.Shard{h100}, nil},
	} {
		if got := summaryShards(c.model, c.rfq); !slices.Equal(got, c.want) {
			t.Errorf("summaryShards(%q, %v) = %v, want %v", c.model, c.rfq, got, c.want)
		}
	}
}

// TestSummaryTopics: a summary goes to the attestation topic of each lot
// of a shard the RFQ went to (the lots' providers follow nothing else),
// the shard's own among them, and to the shard's own topic of a shard the
// RFQ did not go to.
func TestSummaryTopics(t *testing.T) {
	h100, nvl := auction.GPUShard("h100"), auction.GPUShard("h100-nvl")
	rfq := []auction.ShardTopic{
		{Kind: auction.ShardTopicRFQ, Shard: h100, Lot: 3, Lots: 8},
		{Kind: auction.ShardTopicRFQ, Shard: h100, Lot: 5, Lots: 16},
		{Kind: auction.ShardTopicRFQ, Shard: h100},
		{Kind: auction.ShardTopicRFQ, Shard: nvl},
	}
	t4 := auction.GPUShard("t4")
	got := summaryTopics([]auction.Shard{h100, nvl, t4}, rfq)
	want := []string{auction.LotTopic(h100.AttestTopic(), 3, 8), auction.LotTopic(h100.AttestTopic(), 5, 16), h100.AttestTopic(), nvl.AttestTopic(), t4.AttestTopic()}
	if !slices.Equal(got, want) {
		t.Fatalf("summaryTopics = %v, want %v", got, want)
	}
	if got := summaryTopics([]auction.Shard{nvl}, nil); !slices.Equal(got, []string{nvl.AttestTopic()}) {
		t.Fatalf("no RFQ topics: %v, want the shard's", got)
	}
}
