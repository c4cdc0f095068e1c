package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/idlegrid/idlegrid/node"
	"github.com/idlegrid/idlegrid/node/api"
	"github.com/idlegrid/idlegrid/node/doctor"
)

// errBlocked makes the doctor exit 1 after printing its report.
var errBlocked = errors.New("something blocks bidding: see the fixes above")

func newDoctorCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check what a provider needs (driver, GPUs, Docker, NVIDIA runtime, disk, key, reachability, clock) and how to fix it",
		Long: `Check this host and node home, one line per check with what to do about it:
the NVIDIA driver and NVML, GPU health (temperature, uncorrected ECC), the
Docker engine and the NVIDIA container runtime, free disk for the store and
results, the identity key's permissions, the running daemon's peers and
reachability, and whether the clock is NTP-synchronized. Exits 1 when
something blocks bidding.

With a daemon running it checks the config the daemon runs with (its
config.toml, environment and flags); with the daemon stopped, config.toml
(the daemon checks then only say how to start it); before idlegrid init, the
host as a provider with the default config would use it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			home, err := g.resolveHome()
			if err != nil {
				return err
			}
			cfg, source, err := doctorConfig(cmd.Context(), g, home)
			if err != nil {
				return err
			}
			rs := doctor.Run(cmd.Context(), doctor.Checks(doctorDeps(g, cfg, home, source != sourceNoHome)))
			if asJSON {
				if err := printJSON(cmd.OutOrStdout(), rs); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), "%s: %s %s\n\n", home, cfg.Role, source)
				printDoctor(cmd.OutOrStdout(), rs)
			}
			if doctor.Blocking(rs) {
				return errBlocked
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// Where the doctor's config came from.
const (
	sourceDaemon = "(the running daemon's config)"
	sourceFile   = "(config.toml; the daemon is not running)"
	sourceNoHome = "defaults (no node home yet: idlegrid init --role provider creates one)"
)

// doctorConfig is the config to check: the running daemon's, else the
// home's config.toml with the environment, else (before init) a
// provider's defaults.
func doctorConfig(ctx context.Context, g *globals, home string) (node.Config, string, error) {
	cfg, err := node.LoadConfig(home)
	if errors.Is(err, node.ErrNoHome) {
		cfg = node.DefaultConfig(node.RoleProvider)
		cfg.Home = home
		// The defaults leave provider.region to init, so they do not
		// validate: take what the environment sets and check the host.
		_ = cfg.ApplyEnv(os.LookupEnv)
		return cfg, sourceNoHome, nil
	}
	if err != nil {
		return cfg, "", err
	}
	if err := cfg.ApplyEnv(os.LookupEnv); err != nil {
		return cfg, "", err
	}
	c, err := g.client()
	if err != nil {
		return cfg, sourceFile, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	text, err := c.Config(ctx)
	if err != nil {
		return cfg, sourceFile, nil
	}
	running, err := node.ParseConfig("the running daemon's config", text)
	if err != nil {
		return cfg, "", err
	}
	running.Home = home
	return running, sourceDaemon, nil
}

// doctorDeps wires the checks to this host and node home, and to the
// daemon's API when one answers (never before init: no home, no daemon).
func doctorDeps(g *globals, cfg node.Config, home string, hasHome bool) doctor.Deps {
	d := node.DoctorDeps(cfg, home)
	if !hasHome {
		return d
	}
	c, err := g.client()
	if err != nil {
		d.Status = func(context.Context) (api.Status, error) { return api.Status{}, err }
		return d
	}
	d.Status = func(ctx context.Context) (api.Status, error) {
		ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		return c.Status(ctx)
	}
	d.Capacity = c.Capacity
	return d
}

func printDoctor(w io.Writer, rs []doctor.Result) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tRESULT\tDETAIL")
	for _, r := range rs {
		level := string(r.Level)
		if r.Blocks && r.Level == doctor.Fail {
			level = "FAIL (blocks bidding)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Check, level, r.Detail)
		if r.Fix != "" && r.Level != doctor.OK {
			fmt.Fprintf(tw, "\t\tfix: %s\n", r.Fix)
		}
	}
	_ = tw.Flush()
}
