package query

import (
	"math/bits"

	"github.com/idlegrid/idlegrid/auction"
)

// kind is a field's value type; it fixes the operators and the value syntax.
type kind int

const (
	kindModel  kind = iota // gpu: model slug, family-prefix match
	kindCount              // non-negative integer
	kindSize               // bytes; units MiB GiB GB TB, bare = GiB
	kindCC                 // compute capability major.minor
	kindPrice              // USD per GPU-hour -> uUSD
	kindRatio              // 0..1
	kindEnum               // one value of a closed set (region, reachability)
	kindChoice             // tiers / runtimes the renter can use: offer needs one
	kindHolds              // datasets the offer holds
	kindBool               // true / false
)

func (k kind) describe() string {
	return [...]string{
		kindModel: "a GPU model", kindCount: "a count", kindSize: "a size",
		kindCC: "a compute capability", kindPrice: "a price in USD per GPU-hour",
		kindRatio: "a ratio 0..1", kindEnum: "a name", kindChoice: "a name",
		kindHolds: "a CID", kindBool: "a boolean",
	}[k]
}

func (k kind) ordered() bool {
	switch k {
	case kindCount, kindSize, kindCC, kindPrice, kindRatio:
		return true
	}
	return false
}

// field is one entry of the typed registry. Exactly one extractor is set,
// matching the kind: gpuNum/gpuStr are evaluated per free GPU, num/str/set
// per offer.
type field struct {
	name string
	kind kind
	// domain is the closed set of values for kindEnum and kindChoice;
	// for kindChoice its index is the bit in the admitted-set mask.
	domain []string
	perGPU bool

	num    func(o Offer, e evalCtx) (int64, bool)
	ratio  func(o Offer) float64
	str    func(c *auction.Capacity) string
	set    func(c *auction.Capacity) []string
	flag   func(c *auction.Capacity) bool
	gpuNum func(g *auction.GPU) int64
	gpuStr func(g *auction.GPU) string
}

var tierNames = func() []string {
	out := make([]string, len(auction.Tiers))
	for i, t := range auction.Tiers {
		out[i] = string(t)
	}
	return out
}()

// fields is the registry, in the order docs and suggestions list them.
var fields = []*field{
	{name: "gpu", kind: kindModel, perGPU: true, gpuStr: func(g *auction.GPU) string { return g.Model }},
	{name: "gpus", kind: kindCount, num: func(_ Offer, e evalCtx) (int64, bool) {
		return int64(bits.OnesCount64(e.full)), true
	}},
	{name: "vram", kind: kindSize, perGPU: true, gpuNum: func(g *auction.GPU) int64 { return mibToBytes(g.VRAMMiB) }},
	{name: "cc", kind: kindCC, perGPU: true, gpuNum: func(g *auction.GPU) int64 {
		maj, min, err := auction.ParseComputeCap(g.ComputeCap)
		if err != nil {
			return -1 // never equal to, nor above, a parsed value
		}
		return int64(maj*100 + min)
	}},
	{name: "region", kind: kindEnum, str: func(c *auction.Capacity) string { return c.Region.Country }},
	{name: "price", kind: kindPrice, num: func(o Offer, e evalCtx) (int64, bool) {
		return minFloor(o.Capacity, e.q.tierAllowed)
	}},
	priceTier(auction.TierGold),
	priceTier(auction.TierSilver),
	priceTier(auction.TierBronze),
	{name: "reliability", kind: kindRatio, ratio: func(o Offer) float64 { return o.Reliability }},
	{name: "runtime", kind: kindChoice, domain: auction.KnownRuntimes,
		set: func(c *auction.Capacity) []string { return c.Runtimes }},
	{name: "tier", kind: kindChoice, domain: tierNames, set: func(c *auction.Capacity) []string {
		out := make([]string, len(c.Policy.Tiers))
		for i, t := range c.Policy.Tiers {
			out[i] = string(t)
		}
		return out
	}},
	{name: "cpu", kind: kindCount, num: func(o Offer, _ evalCtx) (int64, bool) {
		return int64(o.Capacity.Host.CPUCores), true
	}},
	{name: "ram", kind: kindSize, num: func(o Offer, _ evalCtx) (int64, bool) {
		return mibToBytes(o.Capacity.Host.RAMMiB), true
	}},
	// The CPU share for CPU-only (gpus: 0) work, defined only for offers
	// that have one: free cores, free RAM, and its floor per core-hour.
	{name: "cpu.free", kind: kindCount, num: func(o Offer, _ evalCtx) (int64, bool) {
		if c := o.Capacity.CPU; c != nil {
			return int64(c.FreeCores), true
		}
		return 0, false
	}},
	{name: "ram.free", kind: kindSize, num: func(o Offer, _ evalCtx) (int64, bool) {
		if c := o.Capacity.CPU; c != nil {
			return mibToBytes(c.FreeRAMMiB), true
		}
		return 0, false
	}},
	{name: "price.cpu", kind: kindPrice, num: func(o Offer, _ evalCtx) (int64, bool) {
		if c := o.Capacity.CPU; c != nil {
			return int64(c.FloorMicro), true
		}
		return 0, false
	}},
	{name: "disk", kind: kindSize, num: func(o Offer, _ evalCtx) (int64, bool) {
		return gibToBytes(o.Capacity.Host.DiskGiB), true
	}},
	{name: "dataset", kind: kindHolds, set: func(c *auction.Capacity) []string { return c.Datasets }},
	{name: "reachability", kind: kindEnum,
		domain: []string{string(auction.ReachPublic), string(auction.ReachPrivate), string(auction.ReachRelayed)},
		str:    func(c *auction.Capacity) string { return string(c.Reachability) }},
	{name: "egress", kind: kindBool, flag: func(c *auction.Capacity) bool { return c.Policy.Egress }},
}

// priceTier is price.<tier>: that tier's floor, defined only for offers
// that accept the tier.
func priceTier(t auction.Tier) *field {
	return &field{name: "price." + string(t), kind: kindPrice, num: func(o Offer, _ evalCtx) (int64, bool) {
		if !o.Capacity.Accepts(t) {
			return 0, false
		}
		return int64(o.Capacity.Floor.For(t)), true
	}}
}

var fieldNames = func() []string {
	out := make([]string, len(fields))
	for i, f := range fields {
		out[i] = f.name
	}
	return out
}()

func lookupField(name string) *field {
	for _, f := range fields {
		if f.name == name {
			return f
		}
	}
	return nil
}

// minFloor is the cheapest floor among the tiers the query allows and the
// offer accepts.
func minFloor(c *auction.Capacity, allowed uint64) (int64, bool) {
	best, ok := int64(0), false
	for i, t := range auction.Tiers {
		if allowed&(1<<i) == 0 || !c.Accepts(t) {
			continue
		}
		if f := int64(c.Floor.For(t)); !ok || f < best {
			best, ok = f, true
		}
	}
	return best, ok
}

// Sizes saturate rather than overflow: an absurd record compares as huge.
const maxBytes = int64(1) << 62

func mibToBytes(mib uint64) int64 {
	if mib >= uint64(maxBytes>>20) {
		return maxBytes
	}
	return int64(mib) << 20
}

func gibToBytes(gib uint64) int64 {
	if gib >= uint64(maxBytes>>30) {
		return maxBytes
	}
	return int64(gib) << 30
}
