package auction

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// The bidder's pick step: which GPUs a bid offers.

// picked is the GPU set Quote offers: one model, free GPUs first.
type picked struct {
	model   string
	vramMiB uint64 // the least VRAM among gpus
	gpus    []*GPU
}

// pickGPUs chooses up to RFQ.Resources.GPUs offerable GPUs of one model
// (the model with the most; ties: more VRAM, then slug), or explains why
// there are none.
func pickGPUs(in QuoteInput, pol BidPolicy) (picked, string) {
	r, c := in.RFQ, in.Capacity
	nowMs := in.Now.UnixMilli()
	minMaj, minMin, ccErr := ParseComputeCap(r.Resources.MinComputeCap)
	var count struct{ busy, held, model, vram, cc, hot, power, throttled, late int }
	groups := map[string][]*GPU{}
	for i := range c.GPUs {
		g := &c.GPUs[i]
		bl, bronze := in.Bronze[g.UUID]
		preempt := !g.Free && bronze && r.Tier != TierBronze
		h, hasHealth := in.Telemetry[g.UUID]
		switch {
		case !g.Free && !preempt:
			count.busy++
			continue
		case in.Held[g.UUID]:
			count.held++
			continue
		case !ModelAccepted(r.Resources.Models, g.Model):
			count.model++
			continue
		case g.VRAMMiB < r.Resources.MinVRAMMiB:
			count.vram++
			continue
		case r.Resources.MinComputeCap != "" && (ccErr != nil || !computeCapMeets(g.ComputeCap, minMaj, minMin)):
			count.cc++
			continue
		case preempt && r.StartByMs != 0 && nowMs+int64(bl.NoticeSec)*1000 > r.StartByMs:
			count.late++
			continue
		}
		// Only a GPU that is actually running bronze work is hot for a
		// reason we know about; a free GPU must be cool and quiet.
		if hasHealth && !preempt {
			switch {
			case h.TemperatureC > pol.MaxTempC-pol.ThermalHeadroomC:
				count.hot++
				continue
			case h.PowerLimitW > 0 && h.PowerW > h.PowerLimitW*(1-pol.PowerHeadroom):
				count.power++
				continue
			case h.ThrottleReasons&ThrottleUnhealthy != 0:
				count.throttled++
				continue
			}
		}
		groups[g.Model] = append(groups[g.Model], g)
	}
	var best picked
	for model, gs := range groups {
		// Free GPUs first, then bronze ones with the shortest notice.
		slices.SortStableFunc(gs, func(a, b *GPU) int {
			if a.Free != b.Free {
				if a.Free {
					return -1
				}
				return 1
			}
			return cmp.Compare(in.Bronze[a.UUID].NoticeSec, in.Bronze[b.UUID].NoticeSec)
		})
		gs = gs[:min(len(gs), int(r.Resources.GPUs))]
		if len(gs) == 0 {
			continue
		}
		cand := picked{model: model, gpus: gs, vramMiB: gs[0].VRAMMiB}
		for _, g := range gs {
			cand.vramMiB = min(cand.vramMiB, g.VRAMMiB)
		}
		if best.gpus == nil || cmp.Or(
			cmp.Compare(len(cand.gpus), len(best.gpus)),
			cmp.Compare(cand.vramMiB, best.vramMiB),
			strings.Compare(best.model, cand.model)) > 0 {
			best = cand
		}
	}
	if best.gpus != nil {
		return best, ""
	}
	why := fmt.Sprintf("%d GPUs: %d busy, %d held, %d wrong model, %d low VRAM, %d low compute capability, "+
		"%d preemptible too late, %d too hot, %d near power limit, %d throttled",
		len(c.GPUs), count.busy, count.held, count.model, count.vram, count.cc, count.late, count.hot, count.power, count.throttled)
	if r.Resources.GPUs == 0 {
		why = "the RFQ requests no GPUs"
	}
	return picked{}, why
}

func computeCapMeets(cc string, major, minor int) bool {
	maj, mnr, err := ParseComputeCap(cc)
	return err == nil && (maj > major || maj == major && mnr >= minor)
}
