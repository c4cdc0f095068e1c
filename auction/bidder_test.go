package auction

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

const testImage = "ghcr.io/acme/train:v2@sha256:3f1a9c0000000000000000000000000000000000000000000000000000000000"

// quoteCapacity is an always-open host with 8 free H100s.
func quoteCapacity() *Capacity {
	c := &Capacity{
		V: CapacityVersion, Peer: "12D3KooWprov", Seq: 1,
		IssuedAtMs: fixedNow.UnixMilli(), ExpiresAtMs: fixedNow.Add(time.Hour).UnixMilli(),
		Host:         Host{CPUCores: 64, RAMMiB: 512 << 10, DiskGiB: 2000},
		Region:       Region{Country: "de"},
		Reachability: ReachPublic,
		Runtimes:     []string{RuntimeDocker, RuntimeWasm},
		Floor:        FloorPrice{Gold: 3_000_000, Silver: 2_000_000, Bronze: 1_000_000},
		Policy:       Policy{Tiers: []Tier{TierGold, TierSilver, TierBronze}, MaxDurationSec: 86400, Egress: true},
		Datasets:     []string{"bafyd1", "bafyd3"},
	}
	for i := range 8 {
		c.GPUs = append(c.GPUs, GPU{Index: uint32(i), UUID: fmt.Sprintf("GPU-%d", i), Model: "h100-80gb",
			VRAMMiB: 81559, ComputeCap: "9.0", Free: true})
	}
	return c
}

// quoteRFQ asks for 4 silver H100s for an expected hour, at most two.
func quoteRFQ() *RFQ {
	return &RFQ{
		V: MessagesVersion, Renter: "renter", JobCID: "bafyjob",
		IssuedAtMs: fixedNow.UnixMilli(), ExpiresAtMs: fixedNow.Add(time.Minute).UnixMilli(),
		Resources: Resources{GPUs: 4, Models: []string{"h100"}, MinVRAMMiB: 80_000, MinComputeCap: "9.0",
			CPUCores: 16, RAMMiB: 64 << 10, DiskGiB: 100},
		Runtime: RuntimeDocker, Image: testImage, Tier: TierSilver,
		MaxPriceMicro: 5_000_000, ExpectedDurationSec: 3600, MaxDurationSec: 7200,
		BidWindowMs: 5000, Datasets: []string{"bafyd1", "bafyd2"}, Pricing: PayBid,
	}
}

func quoteInput() QuoteInput {
	return QuoteInput{RFQ: quoteRFQ(), RFQID: testRFQID, Capacity: quoteCapacity(), Now: fixedNow, Policy: DefaultBidPolicy()}
}

// busy marks GPUs idx as leased.
func busy(c *Capacity, idx ...int) {
	for _, i := range idx {
		c.GPUs[i].Free = false
		c.GPUs[i].LeaseID = "lease"
	}
}

func TestQuoteRefusals(t *testing.T) {
	allGPUs := []int{0, 1, 2, 3, 4, 5, 6, 7}
	for _, tc := range []struct {
		name string
		edit func(in *QuoteInput)
		code string
		hint string // a substring of the reason
	}{
		{"nil rfq", func(in *QuoteInput) { in.RFQ = nil }, NoBidInput, "nil"},
		{"nil capacity", func(in *QuoteInput) { in.Capacity = nil }, NoBidInput, "nil"},
		{"rfq expired", func(in *QuoteInput) { in.Now = fixedNow.Add(time.Minute) }, NoBidExpired, "expired"},
		{"runtime not offered", func(in *QuoteInput) { in.Capacity.Runtimes = []string{RuntimeWasm} }, NoBidRuntime, "docker"},
		{"tier not accepted", func(in *QuoteInput) { in.Capacity.Policy.Tiers = []Tier{TierBronze} }, NoBidTier, "silver"},
		{"tier without floor", func(in *QuoteInput) { in.Capacity.Floor.Silver = 0 }, NoBidTier, "silver"},
		{"region not allowed", func(in *QuoteInput) { in.RFQ.Regions = []string{"fr", "nl"} }, NoBidRegion, `"de"`},
		{"duration above policy", func(in *QuoteInput) { in.RFQ.MaxDurationSec = 86401 }, NoBidDuration, "86401"},
		{"unbounded duration under a limit", func(in *QuoteInput) {
			in.RFQ.MaxDurationSec, in.RFQ.ExpectedDurationSec = 0, 0
		}, NoBidDuration, "unbounded"},
		{"image not allowed", func(in *QuoteInput) {
			in.Capacity.Policy.AllowedImages = []string{"docker.io/library/*", "sha256:ffff"}
		}, NoBidImage, "ghcr.io"},
		{"egress forbidden", func(in *QuoteInput) { in.RFQ.Egress = true; in.Capacity.Policy.Egress = false }, NoBidEgress, "egress"},
		{"host too few cores", func(in *QuoteInput) { in.RFQ.Resources.CPUCores = 65 }, NoBidHost, "65 cores"},
		{"host too little ram", func(in *QuoteInput) { in.RFQ.Resources.RAMMiB = 1 << 30 }, NoBidHost, "RAM"},
		{"host too little disk", func(in *QuoteInput) { in.RFQ.Resources.DiskGiB = 2001 }, NoBidHost, "disk"},
		{"bronze notice too short", func(in *QuoteInput) {
			in.RFQ.Tier = TierBronze
			in.RFQ.MinNoticeSec = 301
		}, NoBidNotice, "301"},
		{"start-by passed", func(in *QuoteInput) { in.RFQ.StartByMs = fixedNow.UnixMilli() - 1 }, NoBidStart, "passed"},
		{"calendar closed", func(in *QuoteInput) {
			// fixedNow is Monday 12:00 UTC.
			in.Capacity.Calendar = []Window{{Day: time.Monday, StartMin: 0, EndMin: 12 * 60, FactorPermille: 1000}}
		}, NoBidCalendar, "closed"},
		{"calendar closes before expected end", func(in *QuoteInput) {
			in.Capacity.Calendar = []Window{{Day: time.Monday, StartMin: 12 * 60, EndMin: 12*60 + 59, FactorPermille: 1000}}
		}, NoBidCalendar, "closes in 59m"},
		{"bronze calendar shorter than notice", func(in *QuoteInput) {
			in.RFQ.Tier = TierBronze
			in.Capacity.Calendar = []Window{{Day: time.Monday, StartMin: 12 * 60, EndMin: 12*60 + 4, FactorPermille: 1000}}
		}, NoBidCalendar, "closes in 4m"},
		{"all gpus busy", func(in *QuoteInput) { busy(in.Capacity, allGPUs...) }, NoBidGPUs, "8 busy"},
		{"all gpus held", func(in *QuoteInput) {
			in.Held = map[string]bool{}
			for _, g := range in.Capacity.GPUs {
				in.Held[g.UUID] = true
			}
		}, NoBidGPUs, "8 held"},
		{"wrong model", func(in *QuoteInput) { in.RFQ.Resources.Models = []string{"a100"} }, NoBidGPUs, "8 wrong model"},
		{"low vram", func(in *QuoteInput) { in.RFQ.Resources.MinVRAMMiB = 90_000 }, NoBidGPUs, "8 low VRAM"},
		{"low compute capability", func(in *QuoteInput) { in.RFQ.Resources.MinComputeCap = "10.0" }, NoBidGPUs, "8 low compute"},
		{"all too hot", func(in *QuoteInput) {
			in.Telemetry = map[string]GPUHealth{}
			for _, g := range in.Capacity.GPUs {
				in.Telemetry[g.UUID] = GPUHealth{TemperatureC: 76}
			}
		}, NoBidGPUs, "8 too hot"},
		{"all near power limit", func(in *QuoteInput) {
			in.Telemetry = map[string]GPUHealth{}
			for _, g := range in.Capacity.GPUs {
				in.Telemetry[g.UUID] = GPUHealth{TemperatureC: 40, PowerW: 640, PowerLimitW: 700}
			}
		}, NoBidGPUs, "8 near power"},
		{"all throttled", func(in *QuoteInput) {
			in.Telemetry = map[string]GPUHealth{}
			for _, g := range in.Capacity.GPUs {
				in.Telemetry[g.UUID] = GPUHealth{TemperatureC: 40, ThrottleReasons: 0x40}
			}
		}, NoBidGPUs, "8 throttled"},
		{"bronze leases not preemptible by bronze", func(in *QuoteInput) {
			in.RFQ.Tier = TierBronze
			busy(in.Capacity, allGPUs...)
			in.Bronze = map[string]BronzeLease{"GPU-0": {LeaseID: "l", NoticeSec: 60}}
		}, NoBidGPUs, "8 busy"},
		{"preemption notice misses start-by", func(in *QuoteInput) {
			busy(in.Capacity, allGPUs...)
			in.Bronze = map[string]BronzeLease{"GPU-0": {LeaseID: "l", NoticeSec: 600}}
			in.RFQ.StartByMs = fixedNow.Add(5 * time.Minute).UnixMilli()
		}, NoBidGPUs, "1 preemptible too late"},
		{"cpu-only without a CPU offer", func(in *QuoteInput) { in.RFQ.Resources = Resources{} }, NoBidCPU, "offers no CPU share"},
		{"price above max", func(in *QuoteInput) { in.RFQ.MaxPriceMicro = 1_999_999 }, NoBidPrice, "above max 1999999"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := quoteInput()
			tc.edit(&in)
			q, err := Quote(in)
			var nb *NoBid
			if !errors.As(err, &nb) || !errors.Is(err, ErrNoBid) {
				t.Fatalf("Quote = %+v, %v; want a *NoBid", q.Bid, err)
			}
			if nb.Code != tc.code || !strings.Contains(nb.Reason, tc.hint) {
				t.Fatalf("no bid %q: %s; want code %q mentioning %q", nb.Code, nb.Reason, tc.code, tc.hint)
			}
		})
	}
}

func TestQuoteBid(t *testing.T) {
	in := quoteInput()
	q, err := Quote(in)
	if err != nil {
		t.Fatal(err)
	}
	now := fixedNow.UnixMilli()
	want := Bid{
		V: MessagesVersion, Provider: "12D3KooWprov", RFQ: testRFQID, JobCID: "bafyjob",
		PriceMicro: 2_000_000, GPUs: []string{"GPU-0", "GPU-1", "GPU-2", "GPU-3"},
		Model: "h100-80gb", VRAMMiB: 81559, Region: "de", Datasets: []string{"bafyd1"},
		EarliestStartMs: now, IssuedAtMs: now,
		// The bid window closes 5 s after issue; then a minute for the award.
		ValidUntilMs: now + 5000 + 60_000,
	}
	if fmt.Sprintf("%+v", q.Bid) != fmt.Sprintf("%+v", want) {
		t.Fatalf("bid\n got %+v\nwant %+v", q.Bid, want)
	}
}

func TestQuoteGPUChoice(t *testing.T) {
	for _, tc := range []struct {
		name      string
		edit      func(in *QuoteInput)
		gpus      []string
		startMs   int64 // offset from now
		noticeSec uint32
	}{
		{"partial bid when few are free", func(in *QuoteInput) { busy(in.Capacity, 0, 1, 2, 3, 4, 5) },
			[]string{"GPU-6", "GPU-7"}, 0, 0},
		{"held gpus are skipped", func(in *QuoteInput) { in.Held = map[string]bool{"GPU-0": true, "GPU-2": true} },
			[]string{"GPU-1", "GPU-3", "GPU-4", "GPU-5"}, 0, 0},
		{"hot gpu is skipped", func(in *QuoteInput) {
			in.Telemetry = map[string]GPUHealth{"GPU-1": {TemperatureC: 80}, "GPU-2": {TemperatureC: 40, ThrottleReasons: 0x1 | 0x4}}
		}, []string{"GPU-0", "GPU-2", "GPU-3", "GPU-4"}, 0, 0},
		{"largest model group wins", func(in *QuoteInput) {
			in.RFQ.Resources.Models = nil
			for i := range 5 {
				in.Capacity.GPUs[i].Model = "a100-80gb"
			}
		}, []string{"GPU-0", "GPU-1", "GPU-2", "GPU-3"}, 0, 0},
		{"free gpus before bronze ones", func(in *QuoteInput) {
			busy(in.Capacity, 0, 1, 2, 3, 4, 5)
			in.Bronze = map[string]BronzeLease{"GPU-0": {NoticeSec: 600}, "GPU-1": {NoticeSec: 120}, "GPU-2": {NoticeSec: 300}}
		}, []string{"GPU-6", "GPU-7", "GPU-1", "GPU-2"}, 300_000, 0},
		{"no preemption when enough are free", func(in *QuoteInput) {
			busy(in.Capacity, 0)
			in.Bronze = map[string]BronzeLease{"GPU-0": {NoticeSec: 60}}
		}, []string{"GPU-1", "GPU-2", "GPU-3", "GPU-4"}, 0, 0},
		{"validity capped at a bid's lifetime", func(in *QuoteInput) { in.Policy.BidValidity = time.Hour },
			[]string{"GPU-0", "GPU-1", "GPU-2", "GPU-3"}, 0, 0},
		{"bronze bid promises the policy notice", func(in *QuoteInput) { in.RFQ.Tier = TierBronze; in.RFQ.MinNoticeSec = 120 },
			[]string{"GPU-0", "GPU-1", "GPU-2", "GPU-3"}, 0, 300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := quoteInput()
			tc.edit(&in)
			q, err := Quote(in)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(q.Bid.GPUs, tc.gpus) {
				t.Errorf("GPUs %v, want %v", q.Bid.GPUs, tc.gpus)
			}
			if got := q.Bid.EarliestStartMs - fixedNow.UnixMilli(); got != tc.startMs {
				t.Errorf("earliest start now+%d ms, want now+%d", got, tc.startMs)
			}
			if life := q.Bid.ValidUntilMs - q.Bid.IssuedAtMs; life <= 0 || life > MaxRFQLifetimeMs {
				t.Errorf("bid lifetime %d ms outside 1..%d", life, MaxRFQLifetimeMs)
			}
			if q.Bid.NoticeSec != tc.noticeSec {
				t.Errorf("notice %d, want %d", q.Bid.NoticeSec, tc.noticeSec)
			}
		})
	}
}

func TestQuotePricing(t *testing.T) {
	monday := func(startMin, endMin uint16, permille uint32) []Window {
		return []Window{{Day: time.Monday, StartMin: startMin, EndMin: endMin, FactorPermille: permille}}
	}
	for _, tc := range []struct {
		name  string
		edit  func(in *QuoteInput)
		price uint64
	}{
		{"floor when idle and always open", func(*QuoteInput) {}, 2_000_000},
		{"tier floor", func(in *QuoteInput) { in.RFQ.Tier = TierGold }, 3_000_000},
		{"peak calendar factor", func(in *QuoteInput) { in.Capacity.Calendar = monday(0, 1440, 1500) }, 3_000_000},
		{"off-peak clamps at floor", func(in *QuoteInput) { in.Capacity.Calendar = monday(0, 1440, 800) }, 2_000_000},
		{"utilization curve", func(in *QuoteInput) {
			// 4 of 8 not offerable: 1 + 0.5 * 0.5² = 1.125.
			busy(in.Capacity, 0, 1, 2)
			in.Held = map[string]bool{"GPU-3": true}
		}, 2_250_000},
		{"utilization with zero steepness", func(in *QuoteInput) {
			busy(in.Capacity, 0, 1, 2, 3)
			in.Policy.UtilizationK = 0
		}, 2_000_000},
		{"gap discount when the job fits before close", func(in *QuoteInput) {
			// Open until 14:00 (2 h left, under GapMaxSec); the job's max is 2 h.
			in.Capacity.Calendar = monday(12*60, 14*60, 1500)
		}, 2_550_000},
		{"no gap discount when the job may overrun", func(in *QuoteInput) {
			in.Capacity.Calendar = monday(12*60, 14*60, 1500)
			in.RFQ.MaxDurationSec = 7201
		}, 3_000_000},
		{"no gap discount in a long open period", func(in *QuoteInput) {
			in.Capacity.Calendar = monday(12*60, 1440, 1500)
		}, 3_000_000},
		{"gap discount sells below the floor", func(in *QuoteInput) {
			in.Capacity.Calendar = monday(12*60, 14*60, 1000)
		}, 1_700_000},
		{"market signal replaces the host's own load", func(in *QuoteInput) {
			// The host is 6/8 busy, the market only 50%: no markup.
			busy(in.Capacity, 0, 1, 2, 3, 4, 5)
			in.Market = &MarketSignal{Utilization: 0.5}
		}, 2_000_000},
		{"market scarcity above the threshold", func(in *QuoteInput) {
			// u = 0.95, from 0.9: x = 0.5, 1 + 0.5·0.25 = 1.125.
			in.Policy.ScarcityK = 0.5
			in.Market = &MarketSignal{Utilization: 0.95}
		}, 2_250_000},
		{"market scarcity capped at the index", func(in *QuoteInput) {
			in.Market = &MarketSignal{Utilization: 1, IndexMicro: 2_100_000}
		}, 2_100_000},
		{"a floor above the index holds", func(in *QuoteInput) {
			in.Market = &MarketSignal{Utilization: 1, IndexMicro: 1_000_000}
		}, 2_000_000},
		{"factors multiply", func(in *QuoteInput) {
			// 2M × 1.5 × (1 + 0.5·(6/8)²) × 0.85 = 2M × 1.5 × 1.28125 × 0.85.
			in.Capacity.Calendar = monday(12*60, 14*60, 1500)
			busy(in.Capacity, 0, 1, 2, 3, 4, 5)
		}, 3_267_188},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := quoteInput()
			tc.edit(&in)
			q, err := Quote(in)
			if err != nil {
				t.Fatal(err)
			}
			if q.Bid.PriceMicro != tc.price {
				t.Fatalf("price %d (calendar %v util %v gap %v), want %d",
					q.Bid.PriceMicro, q.CalendarFactor, q.UtilFactor, q.GapFactor, tc.price)
			}
			if float64(q.Bid.PriceMicro) < float64(q.FloorMicro)*q.GapFactor-0.5 {
				t.Fatalf("price %d below floor %d", q.Bid.PriceMicro, q.FloorMicro)
			}
		})
	}
}

// TestQuoteFeedsMatch checks the two halves agree: a bid Quote makes for
// an RFQ passes Match's filters for that RFQ.
func TestQuoteFeedsMatch(t *testing.T) {
	in := quoteInput()
	in.RFQ.Tier = TierBronze
	in.RFQ.MinNoticeSec = 120
	q, err := Quote(in)
	if err != nil {
		t.Fatal(err)
	}
	p := Match(MatchInput{RFQ: in.RFQ, RFQID: testRFQID, Bids: []*Bid{&q.Bid}, Prior: 1, Now: fixedNow.Add(5 * time.Second)})
	if p.Unfilled != "" || len(p.Allocations) != 1 {
		t.Fatalf("plan %+v", p)
	}
}

func TestImageAllowed(t *testing.T) {
	for _, tc := range []struct {
		name    string
		allowed []string
		image   string
		want    bool
	}{
		{"repo pattern", []string{"ghcr.io/acme/*"}, testImage, true},
		{"star crosses slashes", []string{"ghcr.io/*"}, "ghcr.io/acme/sub/x@sha256:00", true},
		{"exact repo without tag", []string{"ghcr.io/acme/train"}, testImage, true},
		{"exact repo with tag", []string{"ghcr.io/acme/train:v2"}, testImage, true},
		{"other tag", []string{"ghcr.io/acme/train:v1"}, testImage, false},
		{"other org", []string{"ghcr.io/evil/*"}, testImage, false},
		{"digest prefix", []string{"sha256:3f1a9c"}, testImage, true},
		{"other digest", []string{"sha256:3f1a9d"}, testImage, false},
		{"digest needs a digest", []string{"sha256:"}, "ghcr.io/acme/train:v2", false},
		{"registry port is not a tag", []string{"localhost:5000/*"}, "localhost:5000/x@sha256:00", true},
		{"middle star", []string{"ghcr.io/*/train"}, testImage, true},
	} {
		if got := ImageAllowed(tc.allowed, tc.image); got != tc.want {
			t.Errorf("%s: ImageAllowed(%v, %q) = %v, want %v", tc.name, tc.allowed, tc.image, got, tc.want)
		}
	}
}

func TestOpenFor(t *testing.T) {
	w := func(d time.Weekday, s, e uint16) Window {
		return Window{Day: d, StartMin: s, EndMin: e, FactorPermille: 1000}
	}
	var week []Window
	for d := time.Sunday; d <= time.Saturday; d++ {
		week = append(week, w(d, 0, 1440))
	}
	for _, tc := range []struct {
		name    string
		cal     []Window
		left    time.Duration
		bounded bool
	}{
		{"empty calendar", nil, 0, false},
		{"one window", []Window{w(time.Monday, 600, 780)}, time.Hour, true},
		{"closed now", []Window{w(time.Monday, 0, 720)}, 0, true},
		{"across midnight", []Window{w(time.Monday, 600, 1440), w(time.Tuesday, 0, 60)}, 13 * time.Hour, true},
		{"whole week", week, 0, false},
	} {
		left, bounded := openFor(tc.cal, fixedNow) // Monday 12:00
		if left != tc.left || bounded != tc.bounded {
			t.Errorf("%s: openFor = %s, %v; want %s, %v", tc.name, left, bounded, tc.left, tc.bounded)
		}
	}
}
