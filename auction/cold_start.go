package auction

import (
	"fmt"
	"time"
)

// Warm placement. A job that names its model (RFQ.Model) starts serving
// at once on a provider that holds the model on disk (its capacity record
// lists it: warm) and only after a download on any other (cold). The
// renter pays the lease's price through that download, so the matcher
// charges it:
//
//	cold start = model size / provider's download bandwidth
//	eff        = (price × rel × (1 + ColdStartCharge × cold start / lease) + RTT) × locality × near
//
// where lease is the RFQ's expected duration (else its maximum, else an
// hour). A warm provider pays no charge, so it wins over a cheaper cold
// one exactly when the cheaper one's download costs more than the price
// difference saves. The bandwidth is what the provider declares in its
// record (Host.BandwidthMbps), believed up to MaxModelBandwidthMbps; one
// that declares none is charged DefaultModelBandwidthMbps.

// Download bandwidths of the cold-start rule, in Mbit/s.
const (
	// DefaultModelBandwidthMbps is assumed for a provider that declares
	// no bandwidth, or whose record the renter did not read: a modest
	// home uplink's downlink, so an undeclared provider is not favoured.
	DefaultModelBandwidthMbps = 100
	// MaxModelBandwidthMbps caps a declared bandwidth (a datacentre
	// host's 100 Gbit/s), so a claim of more buys nothing.
	MaxModelBandwidthMbps = 100_000
)

// ModelHost is what a provider's capacity record says about the RFQ's
// model: whether it holds it, and how fast it downloads.
type ModelHost struct {
	Warm          bool
	BandwidthMbps uint32 // declared; 0: DefaultModelBandwidthMbps
}

// ModelHostOf reads rec (nil: unknown, cold at the default bandwidth)
// for model m.
func ModelHostOf(m *ModelRef, rec *Capacity) ModelHost {
	if rec == nil {
		return ModelHost{}
	}
	h := ModelHost{BandwidthMbps: rec.Host.BandwidthMbps}
	if m != nil {
		h.Warm = rec.Holds(m.ID)
	}
	return h
}

// ColdStart is how long downloading sizeMiB takes at bandwidthMbps
// (0: DefaultModelBandwidthMbps; at most MaxModelBandwidthMbps counts),
// rounded up to the millisecond.
func ColdStart(sizeMiB uint64, bandwidthMbps uint32) time.Duration {
	bw := uint64(bandwidthMbps)
	if bw == 0 {
		bw = DefaultModelBandwidthMbps
	}
	bw = min(bw, MaxModelBandwidthMbps)
	bits := min(sizeMiB, MaxModelSizeMiB) * (8 << 20) // at most 2^24 MiB × 2^23: no overflow
	perMs := bw * 1_000                               // bits per millisecond
	return time.Duration((bits+perMs-1)/perMs) * time.Millisecond
}

// coldStartOf is the cold start the matcher charges provider prov for
// rfq's model: 0 when the RFQ names none or the provider is warm.
func coldStartOf(rfq *RFQ, hosts map[string]ModelHost, prov string) time.Duration {
	if rfq.Model == nil {
		return 0
	}
	h := hosts[prov]
	if h.Warm {
		return 0
	}
	return ColdStart(rfq.Model.SizeMiB, h.BandwidthMbps)
}

// coldStartShare is the cold start as a share of the lease it delays,
// weighted by charge: what the price is raised by.
func coldStartShare(rfq *RFQ, cold time.Duration, charge float64) float64 {
	if cold <= 0 || charge <= 0 {
		return 0
	}
	lease := rfq.ExpectedDurationSec
	if lease == 0 {
		lease = rfq.MaxDurationSec
	}
	if lease == 0 {
		lease = 3600
	}
	return charge * cold.Seconds() / float64(lease)
}

// coldStartNote explains a candidate's cold-start charge for a bid-lost
// reason; "" when it has none.
func (c candidate) coldStartNote(rfq *RFQ) string {
	if c.coldStart <= 0 || rfq.Model == nil {
		return ""
	}
	return fmt.Sprintf(", including a cold start of %s (model %s, %d MiB, not on its disk) charged as +%.1f%%",
		c.coldStart.Round(time.Second), rfq.Model.ID, rfq.Model.SizeMiB, 100*c.coldShare)
}
