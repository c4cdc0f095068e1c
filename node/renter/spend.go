package renter

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// Spend is what this renter paid providers since a time, per UTC day,
// and what the tokens of its services cost.
type Spend struct {
	Since    time.Time
	TotalUSD float64
	Days     []SpendDay // by day, oldest first
	// Services are the service jobs with a lease in the window whose
	// endpoint served tokens, the costliest first.
	Services []SpendService
}

// SpendService is one service's tokens and what they cost: every lease
// of the job (replaced replicas too) over every token its endpoints
// served, as the endpoint reports it.
type SpendService struct {
	Job, Name        string
	PromptTokens     uint64
	CompletionTokens uint64
	SpentUSD         float64
	USDPerMTok       float64
}

// SpendDay is one UTC day of a renter's spending.
type SpendDay struct {
	Day      string // YYYY-MM-DD
	Leases   int
	SpentUSD float64
	GPUHours float64
}

// Spend sums this renter's signed vouchers per day since since (a lease's
// pay counts on the day it started).
func (r *Renter) Spend(since time.Time) (Spend, error) {
	out := Spend{Since: since.UTC()}
	days := map[string]*SpendDay{}
	leases, err := r.db.Leases()
	if err != nil {
		return out, err
	}
	jobs := map[string]bool{}
	for _, l := range leases {
		if l.Side != lease.SideRenter || l.StartsAtMs < since.UnixMilli() {
			continue
		}
		jobs[l.RenterJobID()] = true
		d := time.UnixMilli(l.StartsAtMs).UTC().Format(time.DateOnly)
		if days[d] == nil {
			days[d] = &SpendDay{Day: d}
		}
		usd := float64(l.PaidMicro) / 1e6
		days[d].Leases++
		days[d].SpentUSD += usd
		days[d].GPUHours += workedGPUHours(l, r.now())
		out.TotalUSD += usd
	}
	for _, d := range days {
		out.Days = append(out.Days, *d)
	}
	slices.SortFunc(out.Days, func(a, b SpendDay) int { return strings.Compare(a.Day, b.Day) })
	for id := range jobs {
		if svc, ok := r.serviceSpend(id); ok {
			out.Services = append(out.Services, svc)
		}
	}
	slices.SortFunc(out.Services, func(a, b SpendService) int {
		if a.SpentUSD != b.SpentUSD {
			return cmp.Compare(b.SpentUSD, a.SpentUSD)
		}
		return strings.Compare(a.Job, b.Job)
	})
	return out, nil
}

// serviceSpend is a job's tokens and their cost; false when its
// endpoints served none (or it is no service).
func (r *Renter) serviceSpend(jobID string) (SpendService, bool) {
	c := r.endpoints.tokens(jobID)
	if c.total() == 0 {
		return SpendService{}, false
	}
	j, err := r.db.GetJob(jobID)
	if err != nil {
		return SpendService{}, false
	}
	svc := SpendService{Job: jobID, Name: j.Name, PromptTokens: c.prompt, CompletionTokens: c.completion}
	for _, id := range j.Leases {
		if l, err := r.db.GetLease(id); err == nil && l.Side == lease.SideRenter {
			svc.SpentUSD += float64(l.PaidMicro) / 1e6
		}
	}
	svc.USDPerMTok = perMTok(svc.SpentUSD, c.total())
	return svc, true
}

// workedGPUHours is how long a lease's GPUs worked, in GPU-hours.
func workedGPUHours(l *store.Lease, now time.Time) float64 {
	if l.WorkStartedMs == 0 {
		return 0
	}
	end := l.WorkFinishedMs
	if end == 0 {
		end = now.UnixMilli()
	}
	return float64(len(l.GPUs)) * float64(max(0, end-l.WorkStartedMs)) / float64(time.Hour/time.Millisecond)
}
