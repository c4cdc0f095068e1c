package auction

// SecondPriceReserves is the reserve a renter sets by default for a
// second-price RFQ: per GPU model the RFQ accepts, the median price
// cleared for that model in the RFQ's tier (the price index,
// PriceStats). Without it a thin market clears at the renter's maximum:
// with one bidder, or one per model, there is no second bid to set the
// price. Models the index has not seen get no reserve. Nil for any other
// pricing rule, where the reserve would not be used.
func SecondPriceReserves(rfq *RFQ, index []PriceStat) map[string]uint64 {
	if rfq == nil || rfq.Pricing != PaySecond {
		return nil
	}
	var out map[string]uint64
	for _, s := range index {
		if s.Tier != rfq.Tier || s.MedianMicro == 0 || !ModelAccepted(rfq.Resources.Models, s.Model) {
			continue
		}
		if out == nil {
			out = map[string]uint64{}
		}
		out[s.Model] = s.MedianMicro
	}
	return out
}
