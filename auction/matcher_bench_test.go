package auction

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// benchMatchInput is a large open market answering one 8-GPU silver RFQ:
// n bids from about 0.9n providers (some revised their bid), 1-8 GPUs
// each, a spread of models, regions and prices, and the usual share of
// stale or out-of-policy bids. Most reputations and RTTs are known.
func benchMatchInput(n int) MatchInput {
	rng := rand.New(rand.NewPCG(1, 2))
	rfq := matchRFQ()
	rfq.Resources.GPUs = 8
	rfq.Regions = []string{"de", "fr", "nl", "us"}
	rfq.MaxRTTMs = 150
	rfq.MinReliabilityPermille = 800
	rfq.Datasets = []string{"bafyd1", "bafyd2"}
	rfq.Pricing = PaySecond
	models := []string{"h100-80gb", "h100-80gb", "h100-nvl-94gb", "a100-80gb", "l40s"}
	regions := []string{"de", "fr", "nl", "us", "jp"}
	in := MatchInput{RFQ: rfq, RFQID: testRFQID, Now: fixedNow, Prior: 0.85, Weights: DefaultWeights(),
		Reputation: map[string]float64{}, RTT: map[string]time.Duration{}}
	providers := n * 9 / 10
	for i := range n {
		prov := fmt.Sprintf("12D3KooWprovider%05d", i%providers)
		b := matchBid(prov, 1_500_000+rng.Uint64N(2_000_000), 1+rng.IntN(8))
		b.Model = models[rng.IntN(len(models))]
		b.Region = regions[rng.IntN(len(regions))]
		b.IssuedAtMs -= int64(rng.IntN(5000))
		if rng.IntN(20) == 0 {
			b.ValidUntilMs = fixedNow.UnixMilli() - 1
		}
		if rng.IntN(4) == 0 {
			b.Datasets = rfq.Datasets[:1+rng.IntN(2)]
		}
		if rng.IntN(10) < 8 {
			in.Reputation[prov] = 0.6 + 0.4*rng.Float64()
		}
		if rng.IntN(10) < 9 {
			in.RTT[prov] = time.Duration(5+rng.IntN(200)) * time.Millisecond
		}
		in.Bids = append(in.Bids, b)
	}
	return in
}

func BenchmarkMatch5000(b *testing.B) {
	in := benchMatchInput(5000)
	p := Match(in)
	if p.Unfilled != "" {
		b.Fatalf("benchmark market does not fill: %s", p.Unfilled)
	}
	b.ReportAllocs()
	for b.Loop() {
		Match(in)
	}
}
