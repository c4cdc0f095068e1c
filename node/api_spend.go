package node

import (
	"time"

	"github.com/idlegrid/idlegrid/node/api"
)

// Spend implements api.Backend: the renter's spending, in the API's terms.
func (b apiBackend) Spend(since time.Time) (api.Spend, error) {
	if b.n.renter == nil {
		return api.Spend{}, b.renterOnly()
	}
	s, err := b.n.renter.Spend(since)
	if err != nil {
		return api.Spend{}, err
	}
	out := api.Spend{Since: s.Since, TotalUSD: s.TotalUSD}
	for _, d := range s.Days {
		out.Days = append(out.Days, api.SpendDay{Day: d.Day, Leases: d.Leases, SpentUSD: d.SpentUSD, GPUHours: d.GPUHours})
	}
	for _, v := range s.Services {
		out.Services = append(out.Services, api.SpendService{Job: v.Job, Name: v.Name, PromptTokens: v.PromptTokens,
			CompletionTokens: v.CompletionTokens, SpentUSD: v.SpentUSD, USDPerMTok: v.USDPerMTok})
	}
	return out, nil
}
