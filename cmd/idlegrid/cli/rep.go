package cli

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/idlegrid/idlegrid/node/api"
	"github.com/idlegrid/idlegrid/node/lease"
)

func newRepCmd(g *globals) *cobra.Command {
	var asJSON, quiet bool
	cmd := &cobra.Command{
		Use:   "rep [PEER]",
		Short: "Show providers' reputation as this node computes it: score, evidence, badge",
		Long: `Show the reputation this node gives providers, folded from its own evidence:
the outcomes of its own leases (full weight), receipts other renters gossiped
(lower weight), heartbeat uptime, and verified fraud proofs (score 0). Scores
decay toward market.reliability_prior as evidence ages. The badge (score x
volume) decides who may win gold-tier work. Without PEER, every provider with
evidence is listed, best first.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			var reps []api.Reputation
			if len(args) == 1 {
				r, err := c.Reputation(cmd.Context(), args[0])
				if err != nil {
					return explain(err, g.home)
				}
				reps = []api.Reputation{r}
			} else if reps, err = c.Reputations(cmd.Context()); err != nil {
				return explain(err, g.home)
			}
			if asJSON {
				if len(args) == 1 {
					return printJSON(cmd.OutOrStdout(), reps[0])
				}
				return printJSON(cmd.OutOrStdout(), reps)
			}
			w := cmd.OutOrStdout()
			if quiet {
				return printIDs(w, reps, func(r api.Reputation) string { return r.Provider })
			}
			if len(reps) == 0 {
				fmt.Fprintln(w, "no evidence about any provider yet (every provider scores market.reliability_prior)")
				return nil
			}
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "PROVIDER\tSCORE\tBADGE\tOWN OK/FAIL/NEUTRAL\tGOSSIP OK/FAIL\tUPTIME\tGPU-HOURS\tFRAUD")
			for _, r := range reps {
				uptime := "-"
				if r.UptimeWindows > 0 {
					uptime = fmt.Sprintf("%.0f%%", 100*r.UptimeRatio)
				}
				fraud := ""
				if r.Fraud {
					fraud = "PROVEN"
				}
				fmt.Fprintf(tw, "%s\t%.3f\t%s\t%d/%d/%d\t%d/%d\t%s\t%.1f\t%s\n", lease.Short(r.Provider), r.Score, r.Badge,
					r.OwnSuccesses, r.OwnFailures, r.OwnNeutral, r.GossipSuccesses, r.GossipFailures, uptime, r.GPUHours, fraud)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	quietFlag(cmd, &quiet, "providers' peer IDs, best first")
	return cmd
}
