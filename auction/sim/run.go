package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// Result is a whole replay: every policy on every seed, and per policy
// the mean and spread over seeds.
type Result struct {
	Jobs      int       `json:"jobs"`
	Providers int       `json:"providers"`
	GPUs      int       `json:"gpus"`
	Runs      []Metrics `json:"runs"`
	Summary   []Summary `json:"summary"`
}

// Summary is one policy over the seeds.
type Summary struct {
	Policy                 string `json:"policy"`
	Seeds                  int    `json:"seeds"`
	CostUSD                Stat   `json:"cost_usd"`
	CostOverBound          Stat   `json:"cost_over_bound"`
	Fill                   Stat   `json:"fill"`
	DelayP50Min            Stat   `json:"delay_p50_min"`
	DelayP95Min            Stat   `json:"delay_p95_min"`
	ConstrainedDelayP95Min Stat   `json:"constrained_delay_p95_min"`
	Unplaced               Stat   `json:"unplaced"`
	Utilization            Stat   `json:"utilization"`
	PriceOverFloor         Stat   `json:"price_over_floor"`
	FailedUSD              Stat   `json:"failed_usd"`
	FailedShare            Stat   `json:"failed_share"`
	BidsPerRFQ             Stat   `json:"bids_per_rfq"`
	FeasiblePerRFQ         Stat   `json:"feasible_per_rfq"`
	ReachPerRFQ            Stat   `json:"reach_per_rfq"`
	PhantomsPerRFQ         Stat   `json:"phantoms_per_rfq"`
	Turnout                Stat   `json:"turnout"`
	StarvedShare           Stat   `json:"starved_share"`
	CostPerGPUHour         Stat   `json:"cost_per_gpu_hour"`
	WrongAccepted          Stat   `json:"wrong_accepted"`
	WrongAcceptedAfter     Stat   `json:"wrong_accepted_after_200"`
	CanaryShare            Stat   `json:"canary_share"`
	Caught                 Stat   `json:"caught"`
	Cheaters               Stat   `json:"cheaters"`
}

// Run replays cfg: every policy on every seed.
func Run(cfg Config) (Result, error) {
	cfg.fill()
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	var res Result
	res.Jobs = len(cfg.Jobs)
	for _, seed := range cfg.Seeds {
		for _, name := range cfg.Policies {
			m, w, err := runOne(&cfg, seed, name)
			if err != nil {
				return Result{}, err
			}
			res.Runs = append(res.Runs, m)
			res.Providers = len(w.provs)
			res.GPUs = 0
			for _, n := range w.totalByModel {
				res.GPUs += n
			}
		}
	}
	for _, name := range cfg.Policies {
		res.Summary = append(res.Summary, summarize(name, res.Runs))
	}
	return res, nil
}

func runOne(cfg *Config, seed uint64, name string) (Metrics, *World, error) {
	r, err := runReplay(cfg, seed, policies[name]())
	if err != nil {
		return Metrics{}, nil, fmt.Errorf("sim.Run: %s seed %d: %w", name, seed, err)
	}
	m := r.measure(name)
	var done []*jobState
	var horizon int64
	for _, j := range r.jobs {
		if j.done {
			done = append(done, j)
		}
	}
	for _, l := range r.leases {
		horizon = max(horizon, l.end)
	}
	m.BoundUSD = r.w.lowerBound(done, horizon)
	if m.BoundUSD > 0 {
		m.CostOverBound = m.CostUSD / m.BoundUSD
	}
	return m, r.w, nil
}

func summarize(name string, runs []Metrics) Summary {
	s := Summary{Policy: name}
	var f [23][]float64
	for _, m := range runs {
		if m.Policy != name {
			continue
		}
		s.Seeds++
		for i, x := range []float64{m.CostUSD, m.CostOverBound, m.Fill, m.DelayP50Min, m.DelayP95Min,
			m.ConstrainedDelayP95Min, m.Unplaced, m.Utilization, m.PriceOverFloor, m.FailedUSD, m.FailedShare, m.BidsPerRFQ, m.FeasiblePerRFQ,
			m.WrongAccepted, m.WrongAcceptedAfter, m.CanaryShare, float64(m.Caught), float64(m.Cheaters), m.CostPerGPUHour, m.StarvedShare, m.Turnout, m.ReachPerRFQ, m.PhantomsPerRFQ} {
			f[i] = append(f[i], x)
		}
	}
	for i, dst := range []*Stat{&s.CostUSD, &s.CostOverBound, &s.Fill, &s.DelayP50Min, &s.DelayP95Min,
		&s.ConstrainedDelayP95Min, &s.Unplaced, &s.Utilization, &s.PriceOverFloor, &s.FailedUSD, &s.FailedShare, &s.BidsPerRFQ, &s.FeasiblePerRFQ,
		&s.WrongAccepted, &s.WrongAcceptedAfter, &s.CanaryShare, &s.Caught, &s.Cheaters, &s.CostPerGPUHour, &s.StarvedShare, &s.Turnout, &s.ReachPerRFQ, &s.PhantomsPerRFQ} {
		*dst = stat(f[i])
	}
	return s
}

// WriteJSON writes res as indented JSON.
func (res Result) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(res)
}

// WriteTable writes the summary as an aligned table, mean ± sd.
func (res Result) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "%d jobs, %d providers, %d GPUs\n", res.Jobs, res.Providers, res.GPUs)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	cols := []string{"policy", "seeds", "cost USD", "cost/LB", "fill", "USD/GPU-h", "delay p50 min", "delay p95 min",
		"constr. p95 min", "unplaced", "util", "paid/floor", "failed USD", "failed share", "bids/RFQ", "reach/RFQ", "phantoms/RFQ", "turnout", "starved",
		"wrong kept", "wrong kept >200", "canary cost", "caught"}
	fmt.Fprintln(tw, strings.Join(cols, "\t")+"\t")
	for _, s := range res.Summary {
		pm := func(x Stat, f string) string { return fmt.Sprintf(f+" ±"+f, x.Mean, x.SD) }
		fmt.Fprintln(tw, strings.Join([]string{s.Policy, fmt.Sprint(s.Seeds),
			pm(s.CostUSD, "%.0f"), pm(s.CostOverBound, "%.3f"), pm(s.Fill, "%.3f"), pm(s.CostPerGPUHour, "%.3f"),
			pm(s.DelayP50Min, "%.1f"), pm(s.DelayP95Min, "%.0f"), pm(s.ConstrainedDelayP95Min, "%.0f"),
			pm(s.Unplaced, "%.3f"), pm(s.Utilization, "%.3f"), pm(s.PriceOverFloor, "%.3f"),
			pm(s.FailedUSD, "%.0f"), pm(s.FailedShare, "%.3f"), pm(s.BidsPerRFQ, "%.1f"), pm(s.ReachPerRFQ, "%.1f"), pm(s.PhantomsPerRFQ, "%.1f"), pm(s.Turnout, "%.3f"), pm(s.StarvedShare, "%.3f"),
			pm(s.WrongAccepted, "%.4f"), pm(s.WrongAcceptedAfter, "%.4f"), pm(s.CanaryShare, "%.3f"),
			fmt.Sprintf("%.1f/%.1f", s.Caught.Mean, s.Cheaters.Mean)}, "\t")+"\t")
	}
	return tw.Flush()
}

// WriteSeedTable writes one row per policy and seed, at equal work: cost,
// fill, cost per placed GPU-hour and that over greedy's on the same seed
// (when greedy ran), so a policy that pays less by placing less shows it.
func (res Result) WriteSeedTable(w io.Writer) error {
	greedy := map[uint64]float64{}
	for _, m := range res.Runs {
		if m.Policy == PolicyGreedy {
			greedy[m.Seed] = m.CostPerGPUHour
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\tseed\tcost USD\tfill\tunplaced\tUSD/GPU-h\tvs greedy\tfailed USD\t")
	for _, name := range uniquePolicies(res.Runs) {
		for _, m := range res.Runs {
			if m.Policy != name {
				continue
			}
			vs := "-"
			if g := greedy[m.Seed]; g > 0 {
				vs = fmt.Sprintf("%.3f", m.CostPerGPUHour/g)
			}
			fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.4f\t%.3f\t%.3f\t%s\t%.0f\t\n",
				m.Policy, m.Seed, m.CostUSD, m.Fill, m.Unplaced, m.CostPerGPUHour, vs, m.FailedUSD)
		}
	}
	return tw.Flush()
}

// uniquePolicies lists the policies of runs in their first order.
func uniquePolicies(runs []Metrics) []string {
	var out []string
	for _, m := range runs {
		if !slices.Contains(out, m.Policy) {
			out = append(out, m.Policy)
		}
	}
	return out
}
