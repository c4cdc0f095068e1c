package cli

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/idlegrid/idlegrid/node/api"
	"github.com/idlegrid/idlegrid/node/costs"
)

func newAdviseCmd(g *globals) *cobra.Command {
	var days int
	var target float64
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "advise",
		Short: "Provider: break-even floors per GPU model and tier against the market's prices (changes nothing)",
		Long: `Compute, per GPU model and tier, the floor price per GPU-hour at which this
provider breaks even, from its own signed telemetry and the [costs] of
config.toml over the last days: once at the utilization it measured and once
at --target. Show where the current floors sit against the network's price
index (p10, median, p90 of signed award summaries over the same days). It
never changes the config; set provider.floor_usd yourself.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if target <= 0 || target > 1 {
				return fmt.Errorf("--target %v: want a utilization in (0, 1]", target)
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			e, err := c.Earnings(cmd.Context(), days)
			if err != nil {
				return explain(err, g.home)
			}
			prices, err := c.Prices(cmd.Context(), time.Duration(days)*24*time.Hour)
			if err != nil {
				return explain(err, g.home)
			}
			var offer *api.Offer
			if o, err := c.Capacity(cmd.Context()); err == nil {
				offer = &o
			} else {
				fmt.Fprintf(cmd.ErrOrStderr(), "no capacity record yet (%v): floors unknown\n", err)
			}
			rows := buildAdvice(e, offer, prices, target)
			if asJSON {
				return printJSON(cmd.OutOrStdout(), rows)
			}
			printAdvice(cmd.OutOrStdout(), rows, target)
			return nil
		},
	}
	cmd.Flags().IntVar(&days, "days", 7, "how many days of telemetry and prices to use")
	cmd.Flags().Float64Var(&target, "target", 0.6, "target utilization (leased over offered GPU-hours), 0..1")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// adviceRow is one model and tier.
type adviceRow struct {
	Model             string  `json:"model"`
	Tier              string  `json:"tier"`
	GPUs              int     `json:"gpus"`
	FloorUSD          float64 `json:"floor_usd"`
	Utilization       float64 `json:"utilization"`
	BreakEvenMeasured float64 `json:"break_even_measured_usd"` // +Inf (JSON: -1) with nothing leased
	BreakEvenTarget   float64 `json:"break_even_target_usd"`
	BusyMeasured      bool    `json:"busy_energy_measured"`
	P10USD            float64 `json:"p10_usd"`
	MedianUSD         float64 `json:"median_usd"`
	P90USD            float64 `json:"p90_usd"`
	Awards            int     `json:"awards"` // 0: the index fields are unknown
	// CostsSet is false when [costs] prices nothing: the break-even
	// floors are then unknown.
	CostsSet bool   `json:"costs_set"`
	Advice   string `json:"advice"`
}

// buildAdvice groups the earnings' GPUs by model and prices each tier.
func buildAdvice(e api.Earnings, offer *api.Offer, prices api.Prices, target float64) []adviceRow {
	usage := map[string]*costs.Usage{}
	count := map[string]int{}
	for _, g := range e.GPUs {
		if g.Model == "" {
			continue // seen in telemetry only: no longer in the host
		}
		if usage[g.Model] == nil {
			usage[g.Model] = &costs.Usage{}
		}
		count[g.Model]++
		usage[g.Model].Add(costs.GPULine{
			UUID: g.UUID, Model: g.Model, HostEnergyUSD: g.HostEnergyUSD, LeasedEnergyUSD: g.LeasedEnergyUSD,
			Line: costs.Line{
				EnergyUSD: g.EnergyUSD, DepreciationUSD: g.DepreciationUSD, BandwidthUSD: g.BandwidthUSD,
				LeasedGPUHours: g.LeasedGPUHours, OfferedGPUHours: g.OfferedGPUHours,
			},
		})
	}
	tiers := []string{"gold", "silver", "bronze"}
	var floors api.TierPrices
	if offer != nil {
		tiers, floors = offer.Tiers, offer.FloorUSD
	}
	index := map[[2]string]api.PriceStat{}
	for _, s := range prices.Stats {
		index[[2]string{s.Model, s.Tier}] = s
	}
	var out []adviceRow
	for model, u := range usage {
		r := u.Rates(e.FeePct / 100)
		util := u.Utilization()
		for _, tier := range tiers {
			ix := index[[2]string{model, tier}]
			row := adviceRow{
				Model: model, Tier: tier, GPUs: count[model], FloorUSD: tierPrice(floors, tier), Utilization: util,
				BreakEvenMeasured: r.BreakEven(util), BreakEvenTarget: r.BreakEven(target), BusyMeasured: r.BusyMeasured,
				P10USD: ix.P10USD, MedianUSD: ix.MedianUSD, P90USD: ix.P90USD, Awards: ix.Awards, CostsSet: e.CostsSet,
			}
			index := costs.Index{Awards: ix.Awards, P10: ix.P10USD, Median: ix.MedianUSD, P90: ix.P90USD}
			if e.CostsSet {
				row.Advice = costs.Verdict(row.FloorUSD, row.BreakEvenMeasured, row.BreakEvenTarget, index)
			} else {
				row.Advice = marketVerdict(row.FloorUSD, index)
			}
			if math.IsInf(row.BreakEvenMeasured, 1) {
				row.BreakEvenMeasured = -1 // JSON has no infinity
			}
			out = append(out, row)
		}
	}
	slices.SortFunc(out, func(a, b adviceRow) int {
		if a.Model != b.Model {
			return strings.Compare(a.Model, b.Model)
		}
		return slices.Index(tiers, a.Tier) - slices.Index(tiers, b.Tier)
	})
	return out
}

func tierPrice(p api.TierPrices, tier string) float64 {
	switch tier {
	case "gold":
		return p.Gold
	case "silver":
		return p.Silver
	case "bronze":
		return p.Bronze
	}
	return 0
}

// marketVerdict places a floor in the market's range when no costs are
// set, so nothing can be said about breaking even.
func marketVerdict(floor float64, ix costs.Index) string {
	switch {
	case ix.Awards == 0:
		return "no cleared prices for this model and tier yet; set [costs] to learn the break-even floor"
	case floor > ix.P90:
		return "floor above the market's p90: few awards expected"
	case floor < ix.P10:
		return "floor below the market's p10: room to raise it"
	}
	return "floor inside the market's range; set [costs] to learn whether it pays"
}

func printAdvice(w io.Writer, rows []adviceRow, target float64) {
	if len(rows) == 0 {
		fmt.Fprintln(w, "no GPUs with telemetry in range: run the provider a while, then ask again")
		return
	}
	if !rows[0].CostsSet {
		fmt.Fprintln(w, "costs: not set, so break-even floors are unknown; set electricity and hardware in [costs] of config.toml (docs/operators.md)")
		fmt.Fprintln(w)
	}
	price := func(v float64, known bool) string {
		if !known {
			return "-"
		}
		return fmt.Sprintf("$%.4f", v)
	}
	starred := false
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "MODEL\tTIER\tFLOOR\tUTIL\tBREAK-EVEN\tAT %.0f%%\tP10\tMEDIAN\tP90\tADVICE\n", 100*target)
	for _, r := range rows {
		be := price(r.BreakEvenMeasured, r.CostsSet && r.BreakEvenMeasured >= 0)
		if r.CostsSet && !r.BusyMeasured {
			be += "*"
			starred = true
		}
		known := r.Awards > 0
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.1f%%\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Model, r.Tier, price(r.FloorUSD, r.FloorUSD > 0), 100*r.Utilization,
			be, price(r.BreakEvenTarget, r.CostsSet), price(r.P10USD, known), price(r.MedianUSD, known), price(r.P90USD, known), r.Advice)
	}
	_ = tw.Flush()
	fmt.Fprintln(w, "\nUSD per GPU-hour; - is unknown.")
	if starred {
		fmt.Fprintln(w, "* nothing leased yet: busy energy taken at the idle rate, so the floor is a lower bound.")
	}
}
