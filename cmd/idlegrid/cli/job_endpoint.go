package cli

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/idlegrid/idlegrid/node/api"
	"github.com/idlegrid/idlegrid/node/lease"
)

func newJobEndpointCmd(g *globals) *cobra.Command {
	var remote uint16
	var stop, asJSON bool
	cmd := &cobra.Command{
		Use:   "endpoint JOB [[LOCAL_ADDR:]PORT]",
		Short: "Serve a service job's replicas on one local address (renter)",
		Long: "Opens one listener on the renter node at LOCAL_ADDR:PORT (default 127.0.0.1) for the service job's\n" +
			"container port PORT (or --remote-port) and balances HTTP requests over the job's healthy replicas\n" +
			"(replicas: N in the spec), the one with the fewest requests in flight first. A request a replica\n" +
			"fails before answering anything is sent to another. The endpoint runs in the daemon until the job\n" +
			"ends or `job endpoint JOB --stop`; `job status` shows per replica the requests, errors, latency,\n" +
			"tokens (read from an OpenAI-compatible server's usage), time to first token and $/1M tokens.",
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			ctx, w := cmd.Context(), cmd.OutOrStdout()
			if stop {
				if err := c.StopEndpoint(ctx, args[0]); err != nil {
					return explain(err, g.home)
				}
				fmt.Fprintf(w, "stopped the endpoint of job %s\n", lease.Short(args[0]))
				return nil
			}
			if len(args) < 2 {
				e, err := c.Endpoint(ctx, args[0])
				if err != nil {
					return explain(err, g.home)
				}
				if asJSON {
					return printJSON(w, e)
				}
				printEndpoint(w, &e)
				return nil
			}
			listen, local, err := parseForwardAddr(args[1])
			if err != nil {
				return err
			}
			if remote == 0 {
				remote = local
			}
			if remote == 0 {
				return fmt.Errorf("job endpoint: local port 0 needs --remote-port (the container's port)")
			}
			e, err := c.StartEndpoint(ctx, args[0], api.EndpointRequest{Listen: listen, Port: remote})
			if err != nil {
				return explain(err, g.home)
			}
			if asJSON {
				return printJSON(w, e)
			}
			fmt.Fprintf(w, "serving %s -> job %s port %d over %d replica(s) (stop it with idlegrid job endpoint %s --stop)\n",
				e.Listen, lease.Short(e.Job), e.Port, len(e.Replicas), args[0])
			return nil
		},
	}
	cmd.Flags().Uint16Var(&remote, "remote-port", 0, "container port (default: PORT)")
	cmd.Flags().BoolVar(&stop, "stop", false, "stop the job's endpoint")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the endpoint as JSON")
	return cmd
}

// printEndpoint shows a service's endpoint: the service's totals, then
// each replica's.
func printEndpoint(w io.Writer, e *api.Endpoint) {
	if e == nil {
		return
	}
	fmt.Fprintf(w, "\nendpoint %s -> port %d\n", e.Listen, e.Port)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "REPLICA\tLEASE\tREQUESTS\tREQ/S\tERRORS\tCUT\tP50\tP95\tTTFT P50\tTTFT P95\tTOKENS\t$/1M TOK")
	row := func(name, leaseID string, s api.EndpointStats) {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f\t%d\t%d\t%.1fms\t%.1fms\t%.1fms\t%.1fms\t%d\t%s\n", name, leaseID, s.Requests, s.RatePerSec,
			s.Errors, s.Broken, s.P50Ms, s.P95Ms, s.TTFTP50Ms, s.TTFTP95Ms, s.Tokens(), perMTok(s))
	}
	for _, r := range e.Replicas {
		name := fmt.Sprintf("%d", r.Slot)
		if !r.Live {
			name += " (replaced)"
		}
		row(name, lease.Short(r.Lease), r.EndpointStats)
	}
	row("service", "-", e.Total)
	_ = tw.Flush()
	if e.Total.Retries > 0 {
		fmt.Fprintf(w, "%d request(s) sent again to another replica\n", e.Total.Retries)
	}
}

func perMTok(s api.EndpointStats) string {
	if s.Tokens() == 0 {
		return "-"
	}
	return fmt.Sprintf("$%.4f", s.USDPerMTok)
}
