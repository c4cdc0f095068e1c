package auction

import "fmt"

// selectCPU fills a CPU-only RFQ (gpus: 0): one provider runs the whole
// job, so the best-ranked feasible bid wins alone, at its own price (a
// CPU-only job has no pool to clear a second price over), and the rest
// are backups. cands is sorted by rank and not empty.
func (p *Plan) selectCPU(rfq *RFQ, cands []candidate) {
	win := cands[0]
	p.Allocations = append(p.Allocations, Allocation{
		BidIndex: win.idx, Provider: win.bid.Provider,
		PriceMicro: win.bid.PriceMicro, EffectivePrice: win.eff, ColdStart: win.coldStart,
	})
	for i, c := range cands[1:] {
		p.Backups = append(p.Backups, c.idx)
		p.Losers = append(p.Losers, Rejection{BidIndex: c.idx, Provider: c.bid.Provider, Code: RejectOutranked,
			Reason: fmt.Sprintf("effective price %.0f%s ranked %d; a CPU-only request takes one bid", c.eff, c.coldStartNote(rfq), i+2)})
	}
}
