package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/idlegrid/idlegrid/node/api"
	"github.com/idlegrid/idlegrid/node/api/client"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/node/words"
)

func newMarketCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "market",
		Short: "Search the market for GPU capacity",
	}
	cmd.AddCommand(newMarketSearchCmd(g), newMarketShowCmd(g), newMarketPricesCmd(g))
	return cmd
}

func newMarketSearchCmd(g *globals) *cobra.Command {
	var (
		o             client.SearchOptions
		asJSON, quiet bool
	)
	cmd := &cobra.Command{
		Use:   "search 'QUERY'",
		Short: "Find providers whose signed capacity matches a query",
		Long: `Find providers whose signed capacity records match a query. Terms are
"field op value", joined by spaces (all must hold):

  idlegrid market search 'gpu=h100 vram>=80 region in [de,fr] price<=2.5'

Operators: = != < <= > >= in notin. Sizes take MiB, GiB, GB (a bare number is
GB), prices are USD per GPU-hour. An unknown field, bad unit or type mismatch
is an error that names the closest valid field; no clause is ever dropped.
Fields and units: docs/query.md. An empty query lists every provider.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			q := ""
			if len(args) == 1 {
				q = args[0]
			}
			res, err := c.Search(cmd.Context(), q, o)
			if err != nil {
				return explain(err, g.home)
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), res)
			}
			if quiet {
				return printIDs(cmd.OutOrStdout(), res.Offers, func(o api.Offer) string { return o.PeerID })
			}
			return printSearch(cmd.OutOrStdout(), res)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.Explain, "explain", false, "show how many offers each clause removed")
	f.StringVar(&o.Sort, "sort", "", "sort by a field (price, vram, gpus, reliability, ...); prefix - for descending")
	f.IntVar(&o.Limit, "limit", 0, "show at most N offers (0: all)")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	quietFlag(cmd, &quiet, "providers' peer IDs, in the order of --sort")
	return cmd
}

func printSearch(w io.Writer, res api.SearchResult) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PEER\tREGION\tFREE GPUS\tVRAM\tFREE CPU\tBRONZE\tSILVER\tGOLD\tRUNTIMES\tRELIABILITY")
	for _, o := range res.Offers {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.2f\n",
			lease.Short(o.PeerID), region(o), gpuSummary(o), vramSummary(o), cpuSummary(o.CPU),
			usd(o.FloorUSD.Bronze), usd(o.FloorUSD.Silver), usd(o.FloorUSD.Gold),
			strings.Join(o.Runtimes, ","), o.Reliability)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "%d of %d providers match\n", len(res.Offers), res.Providers)
	if len(res.Explain) > 0 {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "\nCLAUSE\tREMOVED\tREMAINING")
		for _, cs := range res.Explain {
			fmt.Fprintf(tw, "%s\t%d\t%d\n", cs.Clause, cs.Removed, cs.Remaining)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, p := range res.Problems {
		fmt.Fprintf(w, "warning: %s\n", p)
	}
	return nil
}

func newMarketShowCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show PEER",
		Short: "Show one provider's verified capacity record (PEER \"self\" for this node)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			var o api.Offer
			if args[0] == "self" {
				o, err = c.Capacity(cmd.Context())
			} else {
				o, err = c.Provider(cmd.Context(), args[0])
			}
			if err != nil {
				return explain(err, g.home)
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), o)
			}
			return printOffer(cmd.OutOrStdout(), o)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printOffer(w io.Writer, o api.Offer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "peer\t%s\n", o.PeerID)
	fmt.Fprintf(tw, "record\tseq %d, issued %s, expires %s\n", o.Seq, o.IssuedAt.Format("2006-01-02 15:04:05Z"), o.ExpiresAt.Format("2006-01-02 15:04:05Z"))
	fmt.Fprintf(tw, "region\t%s (%s)\n", region(o), o.Reachability)
	fmt.Fprintf(tw, "tiers\t%s\n", strings.Join(o.Tiers, ", "))
	fmt.Fprintf(tw, "floor\tbronze %s  silver %s  gold %s  (USD per GPU-hour)\n", usd(o.FloorUSD.Bronze), usd(o.FloorUSD.Silver), usd(o.FloorUSD.Gold))
	fmt.Fprintf(tw, "runtimes\t%s\n", strings.Join(o.Runtimes, ", "))
	fmt.Fprintf(tw, "host\t%d cores, %d MiB RAM, %d GiB disk\n", o.Host.CPUCores, o.Host.RAMMiB, o.Host.DiskGiB)
	if c := o.CPU; c != nil {
		fmt.Fprintf(tw, "cpu share\t%d of %d cores, %d of %d MiB RAM free for CPU-only jobs, %s per core-hour\n",
			c.FreeCores, c.Cores, c.FreeRAMMiB, c.RAMMiB, usd(c.FloorUSDPerCoreHour))
	}
	if o.MaxDuration != "" {
		fmt.Fprintf(tw, "max duration\t%s\n", o.MaxDuration)
	}
	fmt.Fprintf(tw, "egress\t%v\n", o.Egress)
	for _, s := range o.Calendar {
		fmt.Fprintf(tw, "window\t%s %s-%s x%.2f\n", s.Day, s.Start, s.End, s.Factor)
	}
	for _, d := range o.Datasets {
		fmt.Fprintf(tw, "dataset\t%s\n", d)
	}
	for _, m := range o.Models {
		fmt.Fprintf(tw, "model\t%s\n", m)
	}
	fmt.Fprintf(tw, "version\t%s\n", o.Version)
	if err := tw.Flush(); err != nil {
		return err
	}
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nIDX\tMODEL\tVRAM\tCC\tSTATE\tUUID")
	for _, gpu := range o.GPUs {
		state := "free"
		if !gpu.Free {
			state = "leased"
		}
		fmt.Fprintf(tw, "%d\t%s\t%d MiB\t%s\t%s\t%s\n", gpu.Index, gpu.Model, gpu.VRAMMiB, gpu.ComputeCap, state, gpu.UUID)
	}
	return tw.Flush()
}

func region(o api.Offer) string {
	if o.Zone != "" {
		return o.Country + "/" + o.Zone
	}
	return o.Country
}

func usd(x float64) string {
	if x == 0 {
		return "-"
	}
	return fmt.Sprintf("$%.2f", x)
}

// cpuSummary is the free part of a CPU share, "6c/12GiB"; "-" without one.
func cpuSummary(c *api.OfferCPU) string {
	if c == nil {
		return "-"
	}
	return fmt.Sprintf("%dc/%dGiB", c.FreeCores, c.FreeRAMMiB>>10)
}

// gpuSummary is "2x h100-80gb" (free GPUs by model).
func gpuSummary(o api.Offer) string {
	counts := map[string]int{}
	var order []string
	for _, g := range o.GPUs {
		if !g.Free {
			continue
		}
		if counts[g.Model] == 0 {
			order = append(order, g.Model)
		}
		counts[g.Model]++
	}
	if len(order) == 0 {
		return "0"
	}
	parts := make([]string, len(order))
	for i, m := range order {
		parts[i] = fmt.Sprintf("%dx %s", counts[m], m)
	}
	return strings.Join(parts, ", ")
}

func vramSummary(o api.Offer) string {
	var most uint64
	for _, g := range o.GPUs {
		if g.Free && g.VRAMMiB > most {
			most = g.VRAMMiB
		}
	}
	if most == 0 {
		return "-"
	}
	// GiB, as the memory reports it: an "80gb" H100 has 79.6 GiB. In GB
	// (85.5) the column contradicted the model's name.
	gib := float64(most) / 1024
	if most%1024 == 0 {
		return fmt.Sprintf("%.0f GiB", gib)
	}
	return fmt.Sprintf("%.1f GiB", gib)
}

func newMarketPricesCmd(g *globals) *cobra.Command {
	var (
		window time.Duration
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "prices",
		Short: "Cleared prices per GPU model and tier (median, p10, p90) from signed award summaries",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			p, err := c.Prices(cmd.Context(), window)
			if err != nil {
				return explain(err, g.home)
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), p)
			}
			if len(p.Stats) == 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "no awards seen in the last %s: prices appear as auctions close and their summaries are gossiped\n", words.Duration(window))
				return nil
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintf(tw, "MODEL\tTIER\tAWARDS\tGPUS\tP10\tMEDIAN\tP90\t(USD per GPU-hour, last %s)\n", words.Duration(window))
			for _, s := range p.Stats {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t$%.4f\t$%.4f\t$%.4f\t\n", s.Model, s.Tier, s.Awards, s.GPUs, s.P10USD, s.MedianUSD, s.P90USD)
			}
			return tw.Flush()
		},
	}
	window = 24 * time.Hour
	cmd.Flags().Var((*durationValue)(&window), "window", "how far back, e.g. 24h or 7d")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
