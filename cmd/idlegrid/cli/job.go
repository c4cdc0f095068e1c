package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/idlegrid/idlegrid/node/api"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/node/words"
)

func newJobCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "job", Short: "Post and follow jobs (renter)"}
	cmd.AddCommand(newJobSubmitCmd(g), newJobListCmd(g), newJobStatusCmd(g), newJobLogsCmd(g), newJobResultCmd(g), newJobCancelCmd(g), newJobForwardCmd(g), newJobEndpointCmd(g))
	return cmd
}

func printEvent(w io.Writer, ev api.JobEvent) {
	extra := ""
	if ev.Bids > 0 {
		extra = fmt.Sprintf(" [%s, best $%.4f/GPU-h]", words.Plural(ev.Bids, "bid"), ev.BestPriceUSD)
	}
	fmt.Fprintf(w, "%s  %-16s %s%s\n", ev.At.Local().Format("15:04:05.000"), ev.Kind, ev.Message, extra)
}

func newJobListCmd(g *globals) *cobra.Command {
	var asJSON, quiet bool
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List jobs, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			jobs, err := c.Jobs(cmd.Context())
			if err != nil {
				return explain(err, g.home)
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), jobs)
			}
			if quiet {
				// Newest first, one full ID a line, for scripts:
				// JOB=$(idlegrid job ls -q | head -1).
				for _, j := range jobs {
					fmt.Fprintln(cmd.OutOrStdout(), j.ID)
				}
				return nil
			}
			if len(jobs) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "no jobs yet: post one with idlegrid job submit")
				return nil
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "JOB\tNAME\tSTATE\tLEASES\tCREATED\tREASON")
			for _, j := range jobs {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", j.ID, j.Name, j.State, len(j.Leases), j.CreatedAt.Local().Format(time.DateTime), j.Reason)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	quietFlag(cmd, &quiet, "job IDs, newest first")
	return cmd
}

func newJobStatusCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status JOB",
		Short: "Show a job: state, leases and its auction history",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			j, err := c.Job(cmd.Context(), args[0])
			if err != nil {
				return explain(err, g.home)
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), j)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "job     %s\nname    %s\nstate   %s\n", j.ID, j.Name, j.State)
			if j.Reason != "" {
				fmt.Fprintf(w, "reason  %s\n", j.Reason)
			}
			printLeases(w, j.Leases)
			printReplicas(w, j)
			printForwards(w, j.Forwards)
			printEndpoint(w, j.Endpoint)
			for _, l := range j.Leases {
				if end := leaseEnd(l); end != "" {
					fmt.Fprintf(w, "lease %s: %s\n", lease.Short(l.ID), end)
				}
			}
			fmt.Fprintln(w)
			for _, ev := range j.Events {
				printEvent(w, ev)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printLeases(w io.Writer, leases []api.Lease) {
	if len(leases) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nLEASE\tSIDE\tPROVIDER\tGPUS\tTIER\tPRICE\tSTATE\tSTARTS\tREASON")
	for _, l := range leases {
		state := l.State
		// Health is a running service's: an ended lease has none.
		if l.Health != "" && !lease.State(l.State).Terminal() {
			state += " (" + l.Health + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t$%.4f\t%s\t%s\t%s\n", lease.Short(l.ID), l.Side, lease.Short(l.Provider), len(l.GPUs), l.Tier, l.PriceUSD, state, l.StartsAt.Local().Format("15:04:05"), l.Reason)
	}
	_ = tw.Flush()
}

func newLeasesCmd(g *globals) *cobra.Command {
	var asJSON, quiet bool
	cmd := &cobra.Command{
		Use:   "leases",
		Short: "List this node's leases (as renter or provider)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			leases, err := c.Leases(cmd.Context())
			if err != nil {
				return explain(err, g.home)
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), leases)
			}
			if quiet {
				return printIDs(cmd.OutOrStdout(), leases, func(l api.Lease) string { return l.ID })
			}
			if len(leases) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "no leases yet: a renter's appear when an auction awards one, a provider's when it wins one")
				return nil
			}
			printLeases(cmd.OutOrStdout(), leases)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	quietFlag(cmd, &quiet, "lease IDs")
	return cmd
}

// leaseEnd says how a lease's work ended: its exit code (none when it was
// stopped: cancelled, preempted, out of time), its output and its log;
// empty while it runs.
func leaseEnd(l api.Lease) string {
	var parts []string
	switch {
	case l.ExitCode == nil:
	case *l.ExitCode < 0:
		parts = append(parts, "stopped before it exited")
	default:
		parts = append(parts, fmt.Sprintf("exit %d", *l.ExitCode))
	}
	if l.OutputCID != "" {
		parts = append(parts, fmt.Sprintf("output %s (a %s tar)", l.OutputCID, words.Bytes(l.OutputSize)))
	}
	if len(parts) > 0 && l.LogBytes > 0 {
		parts = append(parts, "log "+words.Bytes(l.LogBytes))
	}
	return strings.Join(parts, ", ")
}
