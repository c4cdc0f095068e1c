package query

import (
	"fmt"
	"math/rand/v2"

	"github.com/idlegrid/idlegrid/auction"
)

const (
	dsA = "bafkreigm5oaiovbm2ppanpabo35rzgyzh7kbg4sg2cwfjedast7isv2peq"
	dsB = "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy"
)

func gpu(i uint32, model string, vramMiB uint64, cc string, free bool) auction.GPU {
	return auction.GPU{Index: i, UUID: fmt.Sprintf("GPU-%s-%d", model, i), Model: model,
		VRAMMiB: vramMiB, ComputeCap: cc, Free: free}
}

func capacity(peer string, mutate func(c *auction.Capacity)) *auction.Capacity {
	c := &auction.Capacity{
		V: auction.CapacityVersion, Peer: peer, Seq: 1,
		Host:         auction.Host{CPUCores: 32, RAMMiB: 256 << 10, DiskGiB: 1000, BandwidthMbps: 1000},
		Region:       auction.Region{Country: "de"},
		Reachability: auction.ReachPublic,
		Runtimes:     []string{auction.RuntimeDocker},
		Floor:        auction.FloorPrice{Gold: 3_000_000, Silver: 2_000_000, Bronze: 1_000_000},
		Policy:       auction.Policy{Tiers: []auction.Tier{auction.TierGold, auction.TierSilver, auction.TierBronze}},
	}
	mutate(c)
	return c
}

// testOffers is a small market with one distinguishing trait per offer.
// Names say what each one is.
func testOffers() []Offer {
	return []Offer{
		{Reliability: 0.95, Capacity: capacity("a-h100x2-de", func(c *auction.Capacity) {
			c.GPUs = []auction.GPU{gpu(0, "h100-80gb", 81559, "9.0", true), gpu(1, "h100-80gb", 81559, "9.0", true)}
			c.Floor = auction.FloorPrice{Gold: 3_500_000, Silver: 2_400_000, Bronze: 1_800_000}
			c.Datasets = []string{dsA}
		})},
		{Reliability: 0.80, Capacity: capacity("b-h100-leased-fr", func(c *auction.Capacity) {
			c.GPUs = []auction.GPU{gpu(0, "h100-80gb", 81559, "9.0", false), gpu(1, "l4", 23034, "8.9", true)}
			c.Region.Country = "fr"
		})},
		{Reliability: 0.99, Capacity: capacity("c-a100-40-us", func(c *auction.Capacity) {
			c.GPUs = []auction.GPU{gpu(0, "a100-40gb", 40960, "8.0", true)}
			c.Region.Country = "us"
			c.Floor = auction.FloorPrice{Silver: 1_200_000}
			c.Policy.Tiers = []auction.Tier{auction.TierSilver}
			c.Policy.Egress = true
		})},
		{Reliability: 0.70, Capacity: capacity("d-4090x4-de", func(c *auction.Capacity) {
			c.GPUs = []auction.GPU{gpu(0, "rtx-4090", 24564, "8.9", true), gpu(1, "rtx-4090", 24564, "8.9", true),
				gpu(2, "rtx-4090", 24564, "8.9", true), gpu(3, "rtx-4090", 24564, "8.9", false)}
			c.Floor = auction.FloorPrice{Bronze: 300_000}
			c.Policy.Tiers = []auction.Tier{auction.TierBronze}
			c.Runtimes = []string{auction.RuntimeDocker, auction.RuntimeWasm}
			c.Reachability = auction.ReachRelayed
			c.Datasets = []string{dsB}
		})},
		{Reliability: 0.90, Capacity: capacity("e-wasm-only-fi", func(c *auction.Capacity) {
			c.GPUs = nil
			c.Runtimes = []string{auction.RuntimeWasm}
			c.Region.Country = "fi"
			c.Host = auction.Host{CPUCores: 8, RAMMiB: 16 << 10, DiskGiB: 100}
			c.CPU = &auction.CPUOffer{Cores: 4, RAMMiB: 8 << 10, FreeCores: 3, FreeRAMMiB: 6 << 10, FloorMicro: 10_000}
			c.Floor = auction.FloorPrice{Silver: 50_000, Bronze: 20_000}
			c.Policy.Tiers = []auction.Tier{auction.TierSilver, auction.TierBronze}
		})},
		{Reliability: 0.97, Capacity: capacity("f-h200-mixed-de", func(c *auction.Capacity) {
			c.GPUs = []auction.GPU{gpu(0, "h200-141gb", 143771, "9.0", true), gpu(1, "l40s", 46068, "8.9", true)}
			c.Host.DiskGiB = 4000
			c.Floor = auction.FloorPrice{Gold: 4_000_000, Silver: 2_500_000, Bronze: 1_500_000}
		})},
	}
}

// randomOffers builds a deterministic synthetic market of n offers for
// benchmarks.
func randomOffers(n int) []Offer {
	r := rand.New(rand.NewPCG(1, 2))
	models := []struct {
		slug string
		mib  uint64
		cc   string
	}{{"h100-80gb", 81559, "9.0"}, {"a100-80gb", 81920, "8.0"}, {"a100-40gb", 40960, "8.0"},
		{"rtx-4090", 24564, "8.9"}, {"l40s", 46068, "8.9"}, {"h200-141gb", 143771, "9.0"}}
	countries := []string{"de", "fr", "us", "fi", "nl", "jp", "ca"}
	out := make([]Offer, n)
	for i := range out {
		m := models[r.IntN(len(models))]
		c := capacity(fmt.Sprintf("p%05d", i), func(c *auction.Capacity) {
			c.GPUs = make([]auction.GPU, 1+r.IntN(8))
			for j := range c.GPUs {
				c.GPUs[j] = gpu(uint32(j), m.slug, m.mib, m.cc, r.IntN(3) > 0)
			}
			c.Region.Country = countries[r.IntN(len(countries))]
			base := uint64(500_000 + r.IntN(3_000_000))
			c.Floor = auction.FloorPrice{Gold: base * 2, Silver: base * 3 / 2, Bronze: base}
		})
		out[i] = Offer{Capacity: c, Reliability: r.Float64()}
	}
	return out
}
