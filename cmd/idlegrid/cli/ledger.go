package cli

import (
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/idlegrid/idlegrid/node"
	"github.com/idlegrid/idlegrid/node/api"
	"github.com/idlegrid/idlegrid/node/lease"
)

func newEarningsCmd(g *globals) *cobra.Command {
	var days int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "earnings",
		Short: "Provider: income, costs and net margin per day and per GPU, and the utilization",
		Long: `Show what renters paid (their latest cumulative vouchers) per day and per GPU,
less what earning it cost as set in [costs] of config.toml: fees, electricity
at the wall (the GPUs' own energy counters from the signed telemetry plus the
host's idle draw, times the PUE, at the time-of-use tariff), bandwidth and
straight-line depreciation. Utilization (UTIL) is GPU-hours the provider's own
signed telemetry attributes to leases over the GPU-hours it attests. Days are
local days of costs.time_zone; a lease counts on the day it started.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			e, err := c.Earnings(cmd.Context(), days)
			if err != nil {
				return explain(err, g.home)
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), e)
			}
			printEarnings(cmd.OutOrStdout(), e)
			return nil
		},
	}
	cmd.Flags().IntVar(&days, "days", 7, "how many days back")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printEarnings(w io.Writer, e api.Earnings) {
	// Without [costs], every cost is unknown, not $0: say so rather than
	// print a net that looks like a profit.
	cost := func(v float64) string {
		if !e.CostsSet {
			return "-"
		}
		return fmt.Sprintf("$%.4f", v)
	}
	fmt.Fprintf(w, "since %s (days in %s): earned $%.4f, net %s, utilization %.1f%%\n", e.Since.Local().Format(time.DateTime),
		e.TimeZone, e.TotalUSD, cost(e.NetUSD), 100*e.FillRate)
	if e.CostsSet {
		fmt.Fprintf(w, "costs: fees $%.4f, energy %.3f kWh $%.4f, depreciation $%.4f, bandwidth $%.4f\n\n",
			e.FeesUSD, e.EnergyKWh, e.EnergyUSD, e.DepreciationUSD, e.BandwidthUSD)
	} else {
		fmt.Fprintf(w, "costs: not set, so net is unknown (energy used: %.3f kWh); set electricity, hardware and fees in [costs] of config.toml (docs/operators.md)\n\n", e.EnergyKWh)
	}
	if len(e.Days) == 0 && len(e.GPUs) == 0 {
		fmt.Fprintln(w, "no telemetry or leases in range yet: run the provider a while, then ask again")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "DAY\tLEASES\tEARNED\tKWH\tENERGY\tDEPREC\tOTHER\tNET\tLEASED GPU-H\tOFFERED GPU-H\tUTIL")
	for _, d := range e.Days {
		fmt.Fprintf(tw, "%s\t%d\t$%.4f\t%.3f\t%s\t%s\t%s\t%s\t%.2f\t%.2f\t%.1f%%\n", d.Day, d.Leases, d.EarnedUSD,
			d.EnergyKWh, cost(d.EnergyUSD), cost(d.DepreciationUSD), cost(d.FeesUSD+d.BandwidthUSD), cost(d.NetUSD), d.LeasedGPUHours, d.OfferedGPUHours, 100*d.FillRate)
	}
	fmt.Fprintln(tw, "\nGPU\tMODEL\tEARNED\tKWH\tENERGY\tDEPREC\tOTHER\tNET\tLEASED GPU-H\tOFFERED GPU-H\tUTIL")
	for _, gp := range e.GPUs {
		fmt.Fprintf(tw, "%s\t%s\t$%.4f\t%.3f\t%s\t%s\t%s\t%s\t%.2f\t%.2f\t%.1f%%\n", gp.UUID, gp.Model, gp.EarnedUSD,
			gp.EnergyKWh, cost(gp.EnergyUSD), cost(gp.DepreciationUSD), cost(gp.FeesUSD+gp.BandwidthUSD), cost(gp.NetUSD), gp.LeasedGPUHours, gp.OfferedGPUHours, 100*gp.FillRate)
	}
	_ = tw.Flush()
}

func newSpendCmd(g *globals) *cobra.Command {
	var days int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "spend",
		Short: "Renter: what this renter's signed vouchers owe, per day, and its services' $/1M tokens",
		Long: `Show what this renter's signed vouchers pay providers per day (a lease counts on
the day it started) and, for each service with a lease in range whose endpoint
served tokens (idlegrid job endpoint), the tokens and what a million of them
cost: every lease of the job, replaced replicas too, over every token served.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			s, err := c.Spend(cmd.Context(), days)
			if err != nil {
				return explain(err, g.home)
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), s)
			}
			printSpend(cmd.OutOrStdout(), s)
			return nil
		},
	}
	cmd.Flags().IntVar(&days, "days", 7, "how many days back")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printSpend(w io.Writer, s api.Spend) {
	fmt.Fprintf(w, "since %s: spent $%.4f\n\n", s.Since.Local().Format(time.DateTime), s.TotalUSD)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "DAY\tLEASES\tSPENT\tGPU-H")
	for _, d := range s.Days {
		fmt.Fprintf(tw, "%s\t%d\t$%.4f\t%.2f\n", d.Day, d.Leases, d.SpentUSD, d.GPUHours)
	}
	if len(s.Services) > 0 {
		fmt.Fprintln(tw, "\nSERVICE\tNAME\tPROMPT TOK\tCOMPLETION TOK\tTOKENS\tSPENT\t$/1M TOK")
		for _, v := range s.Services {
			name := v.Name
			if name == "" {
				name = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t$%.4f\t$%.4f\n", lease.Short(v.Job), name, v.PromptTokens, v.CompletionTokens,
				v.PromptTokens+v.CompletionTokens, v.SpentUSD, v.USDPerMTok)
		}
	}
	_ = tw.Flush()
}

func newAttestCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "attest", Short: "Export and verify the signed telemetry that attests a lease"}
	var out string
	export := &cobra.Command{
		Use:   "export LEASE",
		Short: "Write a lease's signed chain entries (its provider's telemetry and job events) to a file",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			var f *os.File
			if out != "" && out != "-" {
				if f, err = os.Create(out); err != nil {
					return err
				}
				w = f
			}
			err = c.Attestations(cmd.Context(), args[0], w)
			if f != nil {
				if cerr := f.Close(); err == nil {
					err = cerr
				}
				if err == nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s\n", out)
				}
			}
			return explain(err, g.home)
		},
	}
	export.Flags().StringVarP(&out, "output", "o", "", "file to write (default stdout)")
	var asJSON bool
	verify := &cobra.Command{
		Use:   "verify FILE",
		Short: "Check an exported lease attestation offline: every verifier check, named",
		Long: `Check a file written by 'idlegrid attest export' without any network: envelope
signatures and domains, chain continuity, time, fingerprint stability, GPU UUID
clashes, value ranges, energy against power x time, hardware health and the
lease's coverage. Exits 1 when a check fails.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := os.ReadFile(args[0])
			if err != nil {
				return err
			}
			cfg := node.DefaultConfig(node.RoleRenter).Attest
			findings, ok, err := node.VerifyAttestations(data, cfg, time.Now())
			if err != nil {
				return err
			}
			if asJSON {
				if err := printJSON(cmd.OutOrStdout(), findings); err != nil {
					return err
				}
			} else {
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "CHECK\tRESULT\tDETAIL")
				for _, f := range findings {
					res := "ok"
					if !f.OK {
						res = "FAIL"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\n", f.Check, res, f.Message)
				}
				_ = tw.Flush()
			}
			if !ok {
				return fmt.Errorf("%s: attestation verification failed", args[0])
			}
			return nil
		},
	}
	verify.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.AddCommand(export, verify)
	return cmd
}
