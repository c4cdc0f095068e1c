package auction

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"
)

// summary is an award between one renter and one provider, at full weight.
func summary(award, model string, tier Tier, gpus uint32, price uint64, at time.Duration) PriceEntry {
	return PriceEntry{Weight: 1, Summary: AwardSummary{V: MessagesVersion, Renter: "r", Provider: "p", Award: award, Model: model, Tier: tier,
		GPUs: gpus, PriceMicro: price, AtMs: fixedNow.Add(at).UnixMilli()}}
}

func TestPriceStats(t *testing.T) {
	h, a := "h100-80gb", "a100-80gb"
	for _, tc := range []struct {
		name         string
		in           []PriceEntry
		since, until time.Time
		want         []PriceStat
	}{
		{"empty", nil, time.Time{}, time.Time{}, []PriceStat{}},
		{"one award", []PriceEntry{summary("x", h, TierSilver, 2, 100, 0)}, time.Time{}, time.Time{},
			[]PriceStat{{Model: h, Tier: TierSilver, Awards: 1, GPUs: 2, P10Micro: 100, MedianMicro: 100, P90Micro: 100}}},
		{"weighted by gpus", []PriceEntry{
			// 1 GPU at 100, 8 at 200, 1 at 900: 10 GPUs, so p10 = 100,
			// the median and p90 fall in the 8-GPU award.
			summary("a", h, TierSilver, 1, 100, 0),
			summary("b", h, TierSilver, 8, 200, 0),
			summary("c", h, TierSilver, 1, 900, 0),
		}, time.Time{}, time.Time{},
			[]PriceStat{{Model: h, Tier: TierSilver, Awards: 3, GPUs: 10, P10Micro: 100, MedianMicro: 200, P90Micro: 200}}},
		{"nearest rank median", []PriceEntry{
			summary("a", h, TierGold, 1, 300, 0),
			summary("b", h, TierGold, 1, 100, 0),
			summary("c", h, TierGold, 1, 200, 0),
			summary("d", h, TierGold, 1, 400, 0),
		}, time.Time{}, time.Time{},
			[]PriceStat{{Model: h, Tier: TierGold, Awards: 4, GPUs: 4, P10Micro: 100, MedianMicro: 200, P90Micro: 400}}},
		{"duplicate award counted once", []PriceEntry{
			summary("a", h, TierSilver, 4, 100, 0),
			summary("a", h, TierSilver, 4, 100, 0),
			summary("b", h, TierSilver, 1, 500, 0),
		}, time.Time{}, time.Time{},
			[]PriceStat{{Model: h, Tier: TierSilver, Awards: 2, GPUs: 5, P10Micro: 100, MedianMicro: 100, P90Micro: 500}}},
		{"window is half open", []PriceEntry{
			summary("early", h, TierSilver, 1, 1, -time.Millisecond),
			summary("first", h, TierSilver, 1, 10, 0),
			summary("last", h, TierSilver, 1, 20, time.Hour-time.Millisecond),
			summary("late", h, TierSilver, 1, 99, time.Hour),
		}, fixedNow, fixedNow.Add(time.Hour),
			[]PriceStat{{Model: h, Tier: TierSilver, Awards: 2, GPUs: 2, P10Micro: 10, MedianMicro: 10, P90Micro: 20}}},
		{"skips empty award id and zero gpus", []PriceEntry{
			summary("", h, TierSilver, 1, 1, 0),
			summary("z", h, TierSilver, 0, 1, 0),
			summary("ok", h, TierSilver, 1, 7, 0),
		}, time.Time{}, time.Time{},
			[]PriceStat{{Model: h, Tier: TierSilver, Awards: 1, GPUs: 1, P10Micro: 7, MedianMicro: 7, P90Micro: 7}}},
		{"grouped and ordered by model then tier", []PriceEntry{
			summary("1", h, TierBronze, 1, 1, 0),
			summary("2", h, TierGold, 1, 3, 0),
			summary("3", a, TierSilver, 1, 2, 0),
			summary("4", h, TierSilver, 1, 2, 0),
		}, time.Time{}, time.Time{},
			[]PriceStat{
				{Model: a, Tier: TierSilver, Awards: 1, GPUs: 1, P10Micro: 2, MedianMicro: 2, P90Micro: 2},
				{Model: h, Tier: TierGold, Awards: 1, GPUs: 1, P10Micro: 3, MedianMicro: 3, P90Micro: 3},
				{Model: h, Tier: TierSilver, Awards: 1, GPUs: 1, P10Micro: 2, MedianMicro: 2, P90Micro: 2},
				{Model: h, Tier: TierBronze, Awards: 1, GPUs: 1, P10Micro: 1, MedianMicro: 1, P90Micro: 1},
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := PriceStats(tc.in, tc.since, tc.until)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("PriceStats:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestPriceStatsOrderIndependent: conflicting copies of one award and
// shuffled input give the same index.
func TestPriceStatsOrderIndependent(t *testing.T) {
	var in []PriceEntry
	for i := range 200 {
		in = append(in, summary(fmt.Sprint("aw", i%150), []string{"h100-80gb", "l40s"}[i%2], Tiers[i%3],
			uint32(1+i%8), uint64(1_000_000+i*7919%1_000_000), time.Duration(i)*time.Second))
	}
	want := PriceStats(in, time.Time{}, time.Time{})
	rng := rand.New(rand.NewPCG(3, 4))
	for range 20 {
		rng.Shuffle(len(in), func(i, j int) { in[i], in[j] = in[j], in[i] })
		if got := PriceStats(in, time.Time{}, time.Time{}); !reflect.DeepEqual(got, want) {
			t.Fatalf("order changed the index:\n got %+v\nwant %+v", got, want)
		}
	}
}

// TestPriceStatsWeights: evidence weights move the percentiles, weight 0
// drops a summary, and weights above 1 count as 1.
func TestPriceStatsWeights(t *testing.T) {
	h := "h100-80gb"
	weighed := func(e PriceEntry, w float64) PriceEntry { e.Weight = w; return e }
	got := PriceStats([]PriceEntry{
		weighed(summary("cheap", h, TierGold, 1, 100, 0), 1),
		weighed(summary("dear", h, TierGold, 1, 900, 0), 0.25),
		weighed(summary("dearer", h, TierGold, 1, 950, 0), 0.25),
		weighed(summary("unbacked", h, TierGold, 8, 5000, 0), 0),
		weighed(summary("over", h, TierGold, 1, 120, 0), 7),
	}, time.Time{}, time.Time{})
	want := []PriceStat{{Model: h, Tier: TierGold, Awards: 4, GPUs: 4, P10Micro: 100, MedianMicro: 120, P90Micro: 900}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("PriceStats:\n got %+v\nwant %+v", got, want)
	}
}

// TestPriceStatsPartyCaps: one pair reporting a flood of awards counts as
// one ordinary party, and a minority of colluding pairs at full weight
// cannot drag the median out of the range the honest parties paid.
func TestPriceStatsPartyCaps(t *testing.T) {
	h := "h100-80gb"
	trade := func(award, renter, provider string, gpus uint32, price uint64) PriceEntry {
		e := summary(award, h, TierSilver, gpus, price, 0)
		e.Summary.Renter, e.Summary.Provider = renter, provider
		return e
	}
	var honest []PriceEntry
	for i := range 6 {
		for j := range 4 {
			honest = append(honest, trade(fmt.Sprintf("h%d-%d", i, j), fmt.Sprint("renter", i), fmt.Sprint("prov", j%3), 2, uint64(1000+10*j)))
		}
	}
	if got := PriceStats(honest, time.Time{}, time.Time{})[0].MedianMicro; got != 1010 {
		t.Fatalf("honest median %d, want 1010", got)
	}
	inHonestRange := func(name string, in []PriceEntry) {
		t.Helper()
		st := PriceStats(in, time.Time{}, time.Time{})[0]
		if st.MedianMicro < 1000 || st.MedianMicro > 1030 {
			t.Fatalf("%s: median %d left the honest range 1000..1030", name, st.MedianMicro)
		}
	}

	flood := slices.Clone(honest)
	for i := range 500 {
		flood = append(flood, trade(fmt.Sprint("f", i), "sybil-renter", "sybil-prov", 8, 50_000))
	}
	inHonestRange("one pair, 500 awards", flood)

	colluding := slices.Clone(honest)
	for i := range 2 {
		for j := range 50 {
			colluding = append(colluding, trade(fmt.Sprint("c", i, "-", j), fmt.Sprint("c-renter", i), fmt.Sprint("c-prov", i), 8, 50_000))
		}
	}
	inHonestRange("two colluding pairs", colluding)

	// Weighted by evidence, even many fresh pairs stay a minority.
	sybils := slices.Clone(honest)
	for i := range 50 {
		e := trade(fmt.Sprint("s", i), fmt.Sprint("s-renter", i), fmt.Sprint("s-prov", i), 8, 50_000)
		e.Weight = 0.01
		sybils = append(sybils, e)
	}
	inHonestRange("fifty fresh pairs", sybils)
}
