package sim

import (
	"math"
	"slices"
)

// Metrics are one policy's results on one seed. Money is in USD.
type Metrics struct {
	Policy string `json:"policy"`
	Seed   uint64 `json:"seed"`
	// CostUSD is what the renter paid, failed work included; it is also
	// the providers' revenue.
	CostUSD float64 `json:"cost_usd"`
	// BoundUSD is LowerBound for the jobs this policy completed, and
	// CostOverBound the ratio.
	BoundUSD      float64 `json:"bound_usd"`
	CostOverBound float64 `json:"cost_over_bound"`
	// Fill is GPU-hours of completed jobs over GPU-hours requested, and
	// CostPerGPUHour CostUSD over those completed GPU-hours: the price of
	// the work done, so policies that place different work compare.
	Fill           float64 `json:"fill"`
	CostPerGPUHour float64 `json:"cost_per_gpu_hour"`
	// Queueing delay of completed jobs, arrival to the start of the run
	// that finished, in minutes; Constrained is for jobs that accept only
	// some models.
	DelayP50Min            float64 `json:"delay_p50_min"`
	DelayP95Min            float64 `json:"delay_p95_min"`
	ConstrainedDelayP95Min float64 `json:"constrained_delay_p95_min"`
	// Unplaced is the share of jobs never completed.
	Unplaced float64 `json:"unplaced"`
	// Utilization is busy GPU-hours (failed work included) over capacity
	// from the first arrival to the last lease's end.
	Utilization float64 `json:"utilization"`
	// PriceOverFloor is what was paid over the floors of the same leases.
	PriceOverFloor float64 `json:"price_over_floor"`
	// FailedUSD is paid for leases of runs that failed; FailedShare its
	// share of CostUSD.
	FailedUSD   float64 `json:"failed_usd"`
	FailedShare float64 `json:"failed_share"`
	// AtMaxShare is the share of leases paid the renter's maximum price:
	// under second price, awards the reserve did not bring down.
	AtMaxShare float64 `json:"at_max_share"`
	// RFQs the market posted (one per placement attempt), the bids they
	// drew, and per RFQ the bids and the feasible providers (those the
	// digests showed could serve it: what "everyone bids" would draw).
	// Zero for the baselines.
	RFQs           int     `json:"rfqs,omitempty"`
	Bids           int     `json:"bids,omitempty"`
	BidsPerRFQ     float64 `json:"bids_per_rfq,omitempty"`
	FeasiblePerRFQ float64 `json:"feasible_per_rfq,omitempty"`
	// ReachPerRFQ is, for bounded bidding, the providers on the topics
	// each RFQ went to: how many received it (its shards', or with lots
	// its chosen lots').
	ReachPerRFQ float64 `json:"reach_per_rfq,omitempty"`
	// PhantomsPerRFQ is, with Config.Phantoms, how many of each RFQ's
	// expected bidders were phantoms: places in the always-bid prefix no
	// bid came from.
	PhantomsPerRFQ float64 `json:"phantoms_per_rfq,omitempty"`
	// Of the RFQs some host could take then (free GPUs the job accepts,
	// a calendar that lets it), Turnout is the mean of each one's bids
	// over the bids it could have drawn, min(want_bids, such hosts), at
	// most 1, and StarvedShare the share that drew no bid: bounded
	// bidding asked hosts that refused. Everyone-bids rows fall short of
	// 1 only where hosts refused for their own reasons (price).
	Turnout      float64 `json:"turnout,omitempty"`
	StarvedShare float64 `json:"starved_share,omitempty"`
	Leases       int     `json:"leases"`
	Failures     int     `json:"failed_runs"`
	// Cheating (cheat.go): the cheaters and how many a canary caught;
	// of the completed jobs, the share whose run had a cheater, the share
	// that returned a wrong result and the share of wrong results the
	// renter kept, in all and after its first 200 jobs. Canaries are the
	// canary runs started, CanaryUSD what their leases cost and
	// CanaryShare that over what the jobs themselves cost.
	Cheaters           int     `json:"cheaters,omitempty"`
	Caught             int     `json:"caught,omitempty"`
	CheaterWork        float64 `json:"cheater_work,omitempty"`
	WrongShare         float64 `json:"wrong_share,omitempty"`
	WrongAccepted      float64 `json:"wrong_accepted,omitempty"`
	WrongAcceptedAfter float64 `json:"wrong_accepted_after_200,omitempty"`
	Canaries           int     `json:"canaries,omitempty"`
	CanaryUSD          float64 `json:"canary_usd,omitempty"`
	CanaryShare        float64 `json:"canary_share,omitempty"`
}

// measure computes r's metrics (all but the bound).
func (r *replay) measure(name string) Metrics {
	m := Metrics{Policy: name, Seed: r.w.seed}
	var paid, floor, busyGPUh, canaryUSD float64
	var horizon int64
	atMax := 0
	for _, l := range r.leases {
		gpuh := float64(len(l.gpus)) * float64(l.end-l.start) / 3600
		c := gpuh * float64(l.priceMicro) / 1e6
		paid += c
		floor += gpuh * float64(l.floorMicro) / 1e6
		busyGPUh += gpuh
		horizon = max(horizon, l.end)
		if l.priceMicro >= l.job.maxPrice {
			atMax++
		}
		if l.job.canaryOf != nil {
			canaryUSD += c
		}
		if l.failed {
			m.FailedUSD += c
			if l.culprit {
				m.Failures++
			}
		}
	}
	m.Leases = len(r.leases)
	if m.Leases > 0 {
		m.AtMaxShare = float64(atMax) / float64(m.Leases)
	}
	if bc, ok := r.pol.(interface{ bidStats() bidStats }); ok {
		st := bc.bidStats()
		m.RFQs, m.Bids = st.rfqs, st.bids
		if st.rfqs > 0 {
			m.BidsPerRFQ = float64(st.bids) / float64(st.rfqs)
			m.FeasiblePerRFQ = float64(st.feasible) / float64(st.rfqs)
			m.ReachPerRFQ = float64(st.reach) / float64(st.rfqs)
			m.PhantomsPerRFQ = float64(st.phantoms) / float64(st.rfqs)
		}
		if st.asked > 0 {
			m.Turnout = st.turnoutSum / float64(st.asked)
			m.StarvedShare = float64(st.starved) / float64(st.asked)
		}
	}
	m.CostUSD = paid
	r.cheatMetrics(&m, paid, canaryUSD)
	if floor > 0 {
		m.PriceOverFloor = paid / floor
	}
	if paid > 0 {
		m.FailedShare = m.FailedUSD / paid
	}
	var req, placed float64
	var delays, constrained []float64
	undone := 0
	for _, j := range r.jobs {
		gpuh := float64(j.GPUs) * float64(j.DurationSec) / 3600
		req += gpuh
		if !j.done {
			undone++
			continue
		}
		placed += gpuh
		d := float64(j.started-j.arrival) / 60
		delays = append(delays, d)
		if len(j.Models) > 0 {
			constrained = append(constrained, d)
		}
	}
	if req > 0 {
		m.Fill = placed / req
	}
	if placed > 0 {
		m.CostPerGPUHour = paid / placed
	}
	if len(r.jobs) > 0 {
		m.Unplaced = float64(undone) / float64(len(r.jobs))
		horizon -= r.jobs[0].arrival
	}
	m.DelayP50Min, m.DelayP95Min = percentile(delays, 50), percentile(delays, 95)
	m.ConstrainedDelayP95Min = percentile(constrained, 95)
	total := 0
	for _, n := range r.w.totalByModel {
		total += n
	}
	if horizon > 0 && total > 0 {
		m.Utilization = busyGPUh / (float64(total) * float64(horizon) / 3600)
	}
	return m
}

// percentile is the nearest-rank percentile of xs (0 when empty).
func percentile(xs []float64, pct float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	k := int(math.Ceil(pct/100*float64(len(s)))) - 1
	return s[min(max(k, 0), len(s)-1)]
}

// Stat is a mean and a (sample) standard deviation over seeds.
type Stat struct {
	Mean float64 `json:"mean"`
	SD   float64 `json:"sd"`
}

func stat(xs []float64) Stat {
	if len(xs) == 0 {
		return Stat{}
	}
	var s Stat
	for _, x := range xs {
		s.Mean += x
	}
	s.Mean /= float64(len(xs))
	if len(xs) > 1 {
		for _, x := range xs {
			s.SD += (x - s.Mean) * (x - s.Mean)
		}
		s.SD = math.Sqrt(s.SD / float64(len(xs)-1))
	}
	return s
}
