package auction

import (
	"errors"
	"strings"
	"testing"
)

// cpuQuoteInput is quoteInput for a CPU-only wasm job of 2 cores and
// 1 GiB on a host offering 8 cores and 16 GiB at 0.01 USD per core-hour,
// with every GPU leased.
func cpuQuoteInput() QuoteInput {
	in := quoteInput()
	in.RFQ.Resources = Resources{CPUCores: 2, RAMMiB: 1024}
	in.RFQ.Runtime, in.RFQ.Image = RuntimeWasm, ""
	in.Capacity.CPU = &CPUOffer{Cores: 8, RAMMiB: 16 << 10, FreeCores: 8, FreeRAMMiB: 16 << 10, FloorMicro: 10_000}
	busy(in.Capacity, 0, 1, 2, 3, 4, 5, 6, 7)
	return in
}

func TestQuoteCPUOnly(t *testing.T) {
	q, err := Quote(cpuQuoteInput())
	if err != nil {
		t.Fatalf("Quote: %v", err)
	}
	b := q.Bid
	if len(b.GPUs) != 0 || b.Model != CPUModel || b.VRAMMiB != 0 {
		t.Fatalf("bid offers GPUs %v model %q vram %d, want a CPU-only bid", b.GPUs, b.Model, b.VRAMMiB)
	}
	if b.PriceMicro != 20_000 {
		t.Errorf("price %d uUSD/h, want 2 cores × 10000", b.PriceMicro)
	}
	// The fixture's IDs are not CIDs; only the GPU fields matter here.
	if err := b.Validate(); err != nil && (strings.Contains(err.Error(), "gpus") || strings.Contains(err.Error(), "vram_mib") || strings.Contains(err.Error(), "model")) {
		t.Errorf("the CPU bid's GPU fields do not validate: %v", err)
	}
	in := cpuQuoteInput()
	in.RFQ.Resources.CPUCores = 0
	if q, err := Quote(in); err != nil || q.Bid.PriceMicro != 10_000 {
		t.Errorf("a job asking no cores leases one: price %d, err %v", q.Bid.PriceMicro, err)
	}
}

func TestQuoteCPURefusals(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(in *QuoteInput)
		code string
		want string
	}{
		{"no CPU offer", func(in *QuoteInput) { in.Capacity.CPU = nil }, NoBidCPU, "offers no CPU share"},
		{"too few free cores", func(in *QuoteInput) { in.Capacity.CPU.FreeCores = 1 }, NoBidCPU, "2 cores, 1 of 8 free"},
		{"too little free RAM", func(in *QuoteInput) { in.Capacity.CPU.FreeRAMMiB = 512 }, NoBidCPU, "1024 MiB RAM, 512 of 16384"},
		{"above max price", func(in *QuoteInput) { in.RFQ.MaxPriceMicro = 19_999 }, NoBidPrice, "above max 19999"},
		{"runtime not offered", func(in *QuoteInput) { in.Capacity.Runtimes = []string{RuntimeDocker} }, NoBidRuntime, "wasm"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := cpuQuoteInput()
			tc.mod(&in)
			_, err := Quote(in)
			var nb *NoBid
			if !errors.As(err, &nb) || nb.Code != tc.code || !strings.Contains(nb.Reason, tc.want) {
				t.Fatalf("Quote = %v, want code %s mentioning %q", err, tc.code, tc.want)
			}
		})
	}
}
