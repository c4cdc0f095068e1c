package query

import (
	"slices"
	"testing"
)

func peers(offers []Offer) []string {
	out := make([]string, len(offers))
	for i, o := range offers {
		out[i] = o.Capacity.Peer
	}
	return out
}

func matching(t *testing.T, q *Query, offers []Offer) []string {
	t.Helper()
	var out []string
	for _, o := range offers {
		if q.Match(o) {
			out = append(out, o.Capacity.Peer)
		}
	}
	return out
}

func TestMatch(t *testing.T) {
	cases := []struct {
		name  string
		query string
		want  []string
	}{
		{"empty_matches_all", "", []string{"a-h100x2-de", "b-h100-leased-fr", "c-a100-40-us", "d-4090x4-de", "e-wasm-only-fi", "f-h200-mixed-de"}},
		{"design_example_bare_gb", "gpu=h100 vram>=80 region in [de,fr] price<=2.5 reliability>=0.9", []string{"a-h100x2-de"}},
		{"design_example_vendor_gb", "gpu=h100 vram>=80GB region in [de,fr] price<=2.5 reliability>=0.9", []string{"a-h100x2-de"}},
		{"family_prefix", "gpu=h100", []string{"a-h100x2-de"}}, // b's H100 is leased
		{"family_prefix_segment_only", "gpu=h10", nil},
		{"exact_model", "gpu=h200-141gb", []string{"f-h200-mixed-de"}},
		{"gpu_not_equal_any_free_gpu", "gpu!=h100", []string{"b-h100-leased-fr", "c-a100-40-us", "d-4090x4-de", "f-h200-mixed-de"}},
		{"gpu_in", "gpu in [a100,rtx]", []string{"c-a100-40-us", "d-4090x4-de"}},
		{"gpu_clauses_apply_to_the_same_gpu", "gpu=l40s vram>=100", nil},
		{"gpu_clauses_same_gpu_ok", "gpu=h200 vram>=100", []string{"f-h200-mixed-de"}},
		{"gpus_counts_free", "gpus>=3", []string{"d-4090x4-de"}},
		{"gpus_counts_qualifying", "gpu=h200 gpus>=2", nil},
		{"gpus_zero_matches_cpu_only", "gpus=0", []string{"e-wasm-only-fi"}},
		{"cpu_free_needs_a_cpu_share", "cpu.free>=1", []string{"e-wasm-only-fi"}},
		{"cpu_free_counts_free_cores", "cpu.free>=4", nil},
		{"ram_free", "ram.free>=6GiB", []string{"e-wasm-only-fi"}},
		{"ram_free_above", "ram.free>6GiB", nil},
		{"price_cpu", "price.cpu<=0.01", []string{"e-wasm-only-fi"}},
		{"vram_bare_is_gb", "vram>=40", []string{"a-h100x2-de", "c-a100-40-us", "f-h200-mixed-de"}},
		{"vram_bare_gb_includes_h100_at_80", "vram>=80", []string{"a-h100x2-de", "f-h200-mixed-de"}},
		{"vram_gib_excludes_h100_at_80", "vram>=80GiB", []string{"f-h200-mixed-de"}},
		{"vram_gb_vendor_units", "vram>=48GB", []string{"a-h100x2-de", "f-h200-mixed-de"}},
		{"vram_mib_exact", "vram=24564MiB", []string{"d-4090x4-de"}},
		{"cc_numeric_not_lexical", "cc>=9.0", []string{"a-h100x2-de", "f-h200-mixed-de"}},
		{"cc_below", "cc<8.9", []string{"c-a100-40-us"}},
		{"region_in", "region in [fr,fi]", []string{"b-h100-leased-fr", "e-wasm-only-fi"}},
		{"region_notin", "region notin [de]", []string{"b-h100-leased-fr", "c-a100-40-us", "e-wasm-only-fi"}},
		{"price_cheapest_tier", "price<=0.5", []string{"d-4090x4-de", "e-wasm-only-fi"}},
		{"price_follows_tier_clause", "tier=gold price<=3", []string{"b-h100-leased-fr"}},
		{"price_tier_ne", "tier!=bronze price<=1.5", []string{"c-a100-40-us", "e-wasm-only-fi"}},
		{"price_gold_requires_gold", "price.gold>=0", []string{"a-h100x2-de", "b-h100-leased-fr", "f-h200-mixed-de"}},
		{"price_bronze", "price.bronze<1", []string{"d-4090x4-de", "e-wasm-only-fi"}},
		{"reliability", "reliability>=0.95", []string{"a-h100x2-de", "c-a100-40-us", "f-h200-mixed-de"}},
		{"runtime_contains", "runtime=wasm", []string{"d-4090x4-de", "e-wasm-only-fi"}},
		{"runtime_other_than_docker", "runtime!=docker", []string{"d-4090x4-de", "e-wasm-only-fi"}},
		{"tier_gold", "tier=gold", []string{"a-h100x2-de", "b-h100-leased-fr", "f-h200-mixed-de"}},
		{"tier_notin", "tier notin [gold,silver]", []string{"a-h100x2-de", "b-h100-leased-fr", "d-4090x4-de", "e-wasm-only-fi", "f-h200-mixed-de"}},
		{"tier_contradiction", "tier=gold tier=bronze", nil},
		{"cpu", "cpu<16", []string{"e-wasm-only-fi"}},
		{"ram", "ram<32", []string{"e-wasm-only-fi"}},
		{"disk_tb", "disk>=4TB", []string{"f-h200-mixed-de"}},
		{"dataset_held", "dataset=" + dsB, []string{"d-4090x4-de"}},
		{"dataset_not_held", "dataset notin [" + dsA + "," + dsB + "]", []string{"b-h100-leased-fr", "c-a100-40-us", "e-wasm-only-fi", "f-h200-mixed-de"}},
		{"reachability", "reachability=relayed", []string{"d-4090x4-de"}},
		{"egress", "egress=true", []string{"c-a100-40-us"}},
		{"egress_false", "egress!=true cpu>=32 region=us", nil},
	}
	offers := testOffers()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q, err := Parse(tc.query)
			if err != nil {
				t.Fatal(err)
			}
			if got := matching(t, q, offers); !slices.Equal(got, tc.want) {
				t.Errorf("Match(%q) = %q, want %q", tc.query, got, tc.want)
			}
		})
	}
}

func TestMatchNilCapacity(t *testing.T) {
	q, _ := Parse("")
	if q.Match(Offer{}) {
		t.Error("an offer without a record matched")
	}
}

func TestExplain(t *testing.T) {
	cases := []struct {
		name    string
		query   string
		removed []int
	}{
		{"design_example", "gpu=h100 vram>=80GB region in [de,fr] price<=2.5 reliability>=0.9", []int{5, 0, 0, 0, 0}},
		{"order_matters", "region=de reliability>=0.9 gpu=h100", []int{3, 1, 1}},
		{"gpus_counts_gpus_the_whole_query_admits", "gpus>=2 gpu=rtx", []int{5, 0}},
		{"each_clause_counts", "runtime=docker region!=us tier=gold reliability>0.96", []int{1, 1, 1, 2}},
	}
	offers := testOffers()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q, err := Parse(tc.query)
			if err != nil {
				t.Fatal(err)
			}
			stats := Explain(q, offers)
			var removed []int
			for _, s := range stats {
				removed = append(removed, s.Removed)
			}
			if !slices.Equal(removed, tc.removed) {
				t.Errorf("Explain(%q) removed = %v, want %v", tc.query, removed, tc.removed)
			}
			if last := stats[len(stats)-1].Remaining; last != len(matching(t, q, offers)) {
				t.Errorf("last Remaining = %d, Match count = %d", last, len(matching(t, q, offers)))
			}
			if stats[0].Clause != q.Clauses[0].String() || stats[0].Pos != 0 {
				t.Errorf("stat[0] = %+v", stats[0])
			}
		})
	}
}

func TestSearch(t *testing.T) {
	cases := []struct {
		name  string
		query string
		sort  string
		limit int
		want  []string
	}{
		{"price_ascending", "", "price", 0, []string{"e-wasm-only-fi", "d-4090x4-de", "b-h100-leased-fr", "c-a100-40-us", "f-h200-mixed-de", "a-h100x2-de"}},
		{"price_descending_limit", "", "-price", 2, []string{"a-h100x2-de", "f-h200-mixed-de"}},
		{"gold_price_missing_last", "", "price.gold", 0, []string{"b-h100-leased-fr", "a-h100x2-de", "f-h200-mixed-de", "c-a100-40-us", "d-4090x4-de", "e-wasm-only-fi"}},
		{"gold_price_missing_last_desc", "", "-price.gold", 3, []string{"f-h200-mixed-de", "a-h100x2-de", "b-h100-leased-fr"}},
		{"reliability_desc", "region=de", "-reliability", 0, []string{"f-h200-mixed-de", "a-h100x2-de", "d-4090x4-de"}},
		{"vram_of_qualifying_gpu", "gpu=l40s", "vram", 0, []string{"f-h200-mixed-de"}},
		{"vram_desc", "vram>=20", "-vram", 0, []string{"f-h200-mixed-de", "a-h100x2-de", "c-a100-40-us", "d-4090x4-de", "b-h100-leased-fr"}},
		{"no_sort_is_peer_order", "tier=bronze", "", 0, []string{"a-h100x2-de", "b-h100-leased-fr", "d-4090x4-de", "e-wasm-only-fi", "f-h200-mixed-de"}},
		{"gpus_desc", "", "-gpus", 1, []string{"d-4090x4-de"}},
	}
	offers := testOffers()
	before := peers(offers)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q, err := Parse(tc.query)
			if err != nil {
				t.Fatal(err)
			}
			key, err := ParseSort(tc.sort)
			if err != nil {
				t.Fatal(err)
			}
			if got := peers(Search(q, offers, key, tc.limit)); !slices.Equal(got, tc.want) {
				t.Errorf("Search(%q, %q) =\n %q\nwant\n %q", tc.query, tc.sort, got, tc.want)
			}
		})
	}
	if !slices.Equal(peers(offers), before) {
		t.Error("Search reordered its input")
	}
}

func BenchmarkMatch5000(b *testing.B) {
	offers := randomOffers(5000)
	q, err := Parse("gpu=h100 vram>=80GB region in [de,fr,nl] price<=2.5 reliability>=0.5 gpus>=2")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		n = 0
		for _, o := range offers {
			if q.Match(o) {
				n++
			}
		}
	}
	b.ReportMetric(float64(n), "matches")
}

func BenchmarkSearch5000(b *testing.B) {
	offers := randomOffers(5000)
	q, err := Parse("vram>=40GB tier in [silver,bronze] reliability>=0.3")
	if err != nil {
		b.Fatal(err)
	}
	key, _ := ParseSort("price")
	b.ReportAllocs()
	for b.Loop() {
		_ = Search(q, offers, key, 20)
	}
}
