package nodetest_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node"
	"github.com/idlegrid/idlegrid/node/nodetest"
)

// providerSpec is what one test provider offers; ground truth for queries
// is computed from these specs by hand-written predicates, not by the
// query engine under test.
type providerSpec struct {
	profile string
	gpus    int
	region  string
	bronze  float64
	gold    bool // accepts gold (every provider accepts silver and bronze)
}

// profileFacts are the public specs the predicates use.
var profileFacts = map[string]struct {
	family string
	vramGB float64 // label size
	cc     float64
}{
	"h100-sxm-80gb": {"h100", 80, 9.0},
	"a100-sxm-80gb": {"a100", 80, 8.0},
	"l40s":          {"l40s", 48, 8.9},
	"rtx-4090":      {"rtx", 24, 8.9},
	"a10":           {"a10", 24, 8.6},
	"t4":            {"t4", 16, 7.5},
}

func marketSpecs(n int) []providerSpec {
	profiles := []string{"h100-sxm-80gb", "a100-sxm-80gb", "l40s", "rtx-4090", "a10", "t4"}
	base := map[string]float64{"h100-sxm-80gb": 1.90, "a100-sxm-80gb": 1.20, "l40s": 0.90, "rtx-4090": 0.45, "a10": 0.50, "t4": 0.25}
	regions := []string{"de", "fr", "us", "fi", "nl"}
	specs := make([]providerSpec, n)
	for i := range specs {
		p := profiles[i%len(profiles)]
		specs[i] = providerSpec{
			profile: p,
			gpus:    1 + i%3,
			region:  regions[i%len(regions)],
			bronze:  base[p] + 0.10*float64(i%4),
			gold:    i%4 != 3,
		}
	}
	return specs
}

// marketCluster is 1 bootstrap, len(specs) providers and 1 renter, returned
// once every routing table is filled and the renter can find every
// provider's record.
func marketCluster(t *testing.T, specs []providerSpec) (*nodetest.Cluster, *node.Node, map[peer.ID]providerSpec) {
	t.Helper()
	n := len(specs) + 2
	c := nodetest.New(t, n, nodetest.Options{Configure: func(i int, cfg *node.Config) {
		if i == 0 || i == n-1 {
			return
		}
		s := specs[i-1]
		cfg.GPU.Sim.Profiles = slices.Repeat([]string{s.profile}, s.gpus)
		cfg.Provider.Region = s.region
		cfg.Provider.FloorUSD = node.FloorUSD{Gold: s.bronze * 2, Silver: s.bronze * 1.5, Bronze: s.bronze}
		cfg.Provider.Tiers = []string{"silver", "bronze"}
		if s.gold {
			cfg.Provider.Tiers = append(cfg.Provider.Tiers, "gold")
		}
	}})
	byPeer := map[peer.ID]providerSpec{}
	for i, m := range c.ByRole(node.RoleProvider) {
		byPeer[m.Node.ID()] = specs[i]
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	renter := c.ByRole(node.RoleRenter)[0].Node
	waitAllAdvertised(t, ctx, c, renter, len(specs))
	return c, renter, byPeer
}

func searchIDs(t *testing.T, ctx context.Context, r *node.Node, q string) []peer.ID {
	t.Helper()
	res, err := r.Trust().Search(ctx, q, "", 0, false)
	if err != nil {
		t.Fatalf("search %q: %v", q, err)
	}
	var ids []peer.ID
	for _, o := range res.Offers {
		id, err := peer.Decode(o.Capacity.Peer)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func waitAllAdvertised(t *testing.T, ctx context.Context, c *nodetest.Cluster, renter *node.Node, want int) {
	t.Helper()
	if err := nodetest.WaitSearchable(ctx, renter, want); err != nil {
		t.Fatal(err)
	}
}

// TestMarketSearchMatchesGroundTruth: 18 nodes on mocknet, 16 providers
// with mixed simulated GPUs, regions and prices (every profile, region
// and price step of marketSpecs appears). For each query, the
// renter's search returns exactly the providers the hand-written ground
// truth selects.
func TestMarketSearchMatchesGroundTruth(t *testing.T) {
	specs := marketSpecs(16)
	_, renter, byPeer := marketCluster(t, specs)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()

	cheapest := func(s providerSpec) float64 { return s.bronze }
	tests := []struct {
		query string
		want  func(providerSpec) bool
	}{
		{"", func(providerSpec) bool { return true }},
		{"gpu=h100", func(s providerSpec) bool { return profileFacts[s.profile].family == "h100" }},
		{"gpu in [t4,a10] region!=us", func(s providerSpec) bool {
			f := profileFacts[s.profile].family
			return (f == "t4" || f == "a10") && s.region != "us"
		}},
		{"region in [de,fr] gpus>=2", func(s providerSpec) bool { return (s.region == "de" || s.region == "fr") && s.gpus >= 2 }},
		{"vram>=40 price<=1.5", func(s providerSpec) bool { return profileFacts[s.profile].vramGB >= 40 && cheapest(s) <= 1.5 }},
		{"cc>=8.9 region notin [us,nl]", func(s providerSpec) bool {
			return profileFacts[s.profile].cc >= 8.9 && s.region != "us" && s.region != "nl"
		}},
		{"tier=gold gpus=3", func(s providerSpec) bool { return s.gold && s.gpus == 3 }},
		{"price.bronze<0.5", func(s providerSpec) bool { return s.bronze < 0.5-1e-9 }},
		{"gpu=h100 vram>=80 region in [de,fr] price<=2.5 reliability>=0.5", func(s providerSpec) bool {
			return profileFacts[s.profile].family == "h100" && (s.region == "de" || s.region == "fr") && s.bronze <= 2.5
		}},
		{"reliability>=0.9", func(providerSpec) bool { return false }}, // prior is 0.8
	}
	for _, tc := range tests {
		name := strings.ReplaceAll(tc.query, " ", "_")
		if name == "" {
			name = "everything"
		}
		t.Run(name, func(t *testing.T) {
			var want []peer.ID
			for id, s := range byPeer {
				if tc.want(s) {
					want = append(want, id)
				}
			}
			slices.Sort(want)
			if len(want) == 0 && tc.query != "reliability>=0.9" {
				t.Fatalf("ground truth for %q is empty; the fixture no longer exercises it", tc.query)
			}
			got := searchIDs(t, ctx, renter, tc.query)
			if !slices.Equal(got, want) {
				t.Errorf("query %q: got %d providers, want %d\n got %v\nwant %v", tc.query, len(got), len(want), got, want)
			}
		})
	}
	// A query error names the closest field and nothing is searched.
	if _, err := renter.Trust().Search(ctx, "regoin=de", "", 0, false); err == nil || !strings.Contains(err.Error(), `did you mean "region"`) {
		t.Fatalf("misspelt field: %v", err)
	}
	if t.Failed() {
		t.Logf("providers: %v", slices.Collect(maps.Keys(byPeer)))
	}
}

// TestLeasedGPUDisappearsFromSearch: leasing a provider's GPUs republishes
// its record (at most one put per 2 s, so a second lease soon after the
// first reaches the DHT when the gap ends); searches stop counting them,
// and freeing brings them back.
func TestLeasedGPUDisappearsFromSearch(t *testing.T) {
	specs := []providerSpec{{"a10", 2, "de", 0.5, true}, {"t4", 1, "fr", 0.25, true}}
	c, renter, _ := marketCluster(t, specs)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	prov := c.ByRole(node.RoleProvider)[0].Node
	gpus := prov.Provider().Capacity().GPUs
	wantIDs := func(q string, ids ...peer.ID) func() bool {
		return func() bool {
			got := searchIDs(t, ctx, renter, q)
			slices.Sort(ids)
			return slices.Equal(got, ids)
		}
	}
	if err := prov.Provider().LeaseGPU(gpus[0].UUID, "lease-1"); err != nil {
		t.Fatal(err)
	}
	if err := nodetest.WaitFor(ctx, "one leased GPU to leave gpus>=2", wantIDs("gpu=a10 gpus>=2")); err != nil {
		t.Fatal(err)
	}
	if err := prov.Provider().LeaseGPU(gpus[0].UUID, "lease-2"); err == nil {
		t.Fatal("leasing a leased GPU must fail")
	}
	if err := prov.Provider().LeaseGPU(gpus[1].UUID, "lease-1"); err != nil {
		t.Fatal(err)
	}
	if err := nodetest.WaitFor(ctx, "a fully leased provider to leave gpu=a10", wantIDs("gpu=a10")); err != nil {
		t.Fatal(err)
	}
	var rec *auction.Capacity
	if err := nodetest.WaitFor(ctx, "the record to show both GPUs leased", func() bool {
		r, err := renter.Trust().ProviderRecord(ctx, prov.ID())
		rec = r
		return err == nil && r.FreeGPUs() == 0 && r.GPUs[0].LeaseID == "lease-1"
	}); err != nil {
		t.Fatalf("%v: record after leasing: %+v", err, rec)
	}
	if err := prov.Provider().ReleaseGPU(gpus[0].UUID); err != nil {
		t.Fatal(err)
	}
	if err := nodetest.WaitFor(ctx, "a freed GPU to come back", wantIDs("gpu=a10", prov.ID())); err != nil {
		t.Fatal(err)
	}
	if err := prov.Provider().LeaseGPU("GPU-not-mine", "x"); err == nil {
		t.Fatal("leasing an unknown GPU must fail")
	}
}
