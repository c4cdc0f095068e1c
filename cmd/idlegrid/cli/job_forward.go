package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/idlegrid/idlegrid/node/api"
	"github.com/idlegrid/idlegrid/node/api/client"
	"github.com/idlegrid/idlegrid/node/lease"
)

func newJobForwardCmd(g *globals) *cobra.Command {
	var remote uint16
	var detach, stop, asJSON bool
	cmd := &cobra.Command{
		Use:   "forward JOB [LOCAL_ADDR:]PORT",
		Short: "Forward a local port to a service job's container port (renter)",
		Long: "Opens a listener on the renter node at LOCAL_ADDR:PORT (default 127.0.0.1) and carries each\n" +
			"connection over libp2p to the container port PORT (or --remote-port) of the service job,\n" +
			"wherever it runs. Without --detach it forwards until interrupted; with it, until the job ends or\n" +
			"`job forward --stop`. `job status` shows the forward's p50/p95 latency and requests/s.",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			listen, local, err := parseForwardAddr(args[1])
			if err != nil {
				return err
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			w := cmd.OutOrStdout()
			if stop {
				return explain(stopForward(ctx, w, c, args[0], listen, remote), g.home)
			}
			if remote == 0 {
				remote = local
			}
			if remote == 0 {
				return fmt.Errorf("job forward: local port 0 needs --remote-port (the container's port)")
			}
			f, err := c.StartForward(ctx, args[0], api.ForwardRequest{Listen: listen, Port: remote})
			if err != nil {
				return explain(err, g.home)
			}
			if asJSON {
				if err := printJSON(w, f); err != nil {
					return err
				}
			} else if detach {
				fmt.Fprintf(w, "forwarding %s -> job %s port %d (stop it with idlegrid job forward %s %s --stop)\n", f.Listen, lease.Short(f.Job), f.Port, args[0], args[1])
			} else {
				fmt.Fprintf(w, "forwarding %s -> job %s port %d until Ctrl-C\n", f.Listen, lease.Short(f.Job), f.Port)
			}
			if detach {
				return nil
			}
			sctx, cancel := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
			defer cancel()
			<-sctx.Done()
			dctx, dcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer dcancel()
			return explain(c.StopForward(dctx, args[0], remote), g.home)
		},
	}
	cmd.Flags().Uint16Var(&remote, "remote-port", 0, "container port (default: PORT)")
	cmd.Flags().BoolVar(&detach, "detach", false, "leave the forward running in the daemon and return")
	cmd.Flags().BoolVar(&stop, "stop", false, "stop the daemon's forward that the same arguments started")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the forward as JSON")
	return cmd
}

// stopForward ends the job's forward that the start command's arguments
// name (see matchForwards).
func stopForward(ctx context.Context, w io.Writer, c *client.Client, job, listen string, remote uint16) error {
	fs, err := c.Forwards(ctx, job)
	if err != nil {
		return err
	}
	match := matchForwards(fs, listen, remote)
	if len(match) != 1 {
		var have []string
		for _, f := range fs {
			have = append(have, fmt.Sprintf("%s -> port %d", f.Listen, f.Port))
		}
		what := "from " + listen
		if remote != 0 {
			what = fmt.Sprintf("to port %d", remote)
		}
		switch {
		case len(fs) == 0:
			return fmt.Errorf("job %s has no forward to stop", lease.Short(job))
		case len(match) == 0:
			return fmt.Errorf("job %s has no forward %s (it forwards %s)", lease.Short(job), what, strings.Join(have, ", "))
		default:
			return fmt.Errorf("job %s has several forwards %s (%s): name one by its address", lease.Short(job), what, strings.Join(have, ", "))
		}
	}
	f := match[0]
	if err := c.StopForward(ctx, job, f.Port); err != nil {
		return err
	}
	fmt.Fprintf(w, "stopped forwarding %s -> job %s port %d\n", f.Listen, lease.Short(f.Job), f.Port)
	return nil
}

// matchForwards finds the forwards that the arguments of the command that
// started one name, whichever of them the user repeats: the container
// port (--remote-port); else the listening address; else, for a port 0,
// the forwards on that host; else the container port given as PORT.
func matchForwards(fs []api.Forward, listen string, remote uint16) []api.Forward {
	host, port, _ := net.SplitHostPort(listen)
	rules := []func(api.Forward) bool{
		func(f api.Forward) bool { return f.Listen == listen },
		func(f api.Forward) bool { fh, _, _ := net.SplitHostPort(f.Listen); return port == "0" && fh == host },
		func(f api.Forward) bool { return strconv.Itoa(int(f.Port)) == port },
	}
	if remote != 0 {
		rules = rules[:0]
		rules = append(rules, func(f api.Forward) bool { return f.Port == remote })
	}
	for _, rule := range rules {
		var out []api.Forward
		for _, f := range fs {
			if rule(f) {
				out = append(out, f)
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	return nil
}

// parseForwardAddr splits [LOCAL_ADDR:]PORT into a listen address and
// its port.
func parseForwardAddr(s string) (listen string, port uint16, err error) {
	host, p := "127.0.0.1", s
	if i := strings.LastIndexByte(s, ':'); i >= 0 {
		host, p = strings.Trim(s[:i], "[]"), s[i+1:]
	}
	n, err := strconv.ParseUint(p, 10, 16)
	if err != nil {
		return "", 0, fmt.Errorf("job forward: %q: want [LOCAL_ADDR:]PORT", s)
	}
	return net.JoinHostPort(host, p), uint16(n), nil
}

// printForwards shows a job's forwards and their request stats.
func printForwards(w io.Writer, fs []api.Forward) {
	if len(fs) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nFORWARD\tPORT\tCONNS\tREQUESTS\tREQ/S\tP50\tP95\tFAILED")
	for _, f := range fs {
		s := f.Stats
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.1f\t%.2fms\t%.2fms\t%d\n", f.Listen, f.Port, s.Conns, s.Requests, s.RatePerSec, s.P50Ms, s.P95Ms, s.Failed)
	}
	_ = tw.Flush()
}
