package cli

import (
	"fmt"
	"os"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"

	"github.com/idlegrid/idlegrid/node"
)

func newDaemonCmd(g *globals) *cobra.Command {
	var (
		listen    []string
		bootstrap []string
		apiListen string
		sets      []string
		salvage   bool
	)
	cmd := &cobra.Command{
		Use:   "daemon",
		Short: "Run the node (provider, renter or bootstrap, as configured)",
		Long: `Run the node of the home until SIGINT or SIGTERM.

Settings come from config.toml, then IDLEGRID_<SECTION>_<KEY> environment
variables, then flags (--set section.key=value for any key).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			home, err := g.resolveHome()
			if err != nil {
				return err
			}
			cfg, err := node.LoadConfig(home)
			if err != nil {
				return err
			}
			if err := cfg.ApplyEnv(os.LookupEnv); err != nil {
				return err
			}
			overrides := map[string][]string{"p2p.listen": listen, "p2p.bootstrap": bootstrap}
			for key, vals := range overrides {
				if len(vals) > 0 {
					if err := cfg.Set(key, strings.Join(vals, ",")); err != nil {
						return err
					}
				}
			}
			if apiListen != "" {
				cfg.API.Listen = apiListen
			}
			cfg.Store.Salvage = salvage
			for _, kv := range sets {
				k, v, ok := strings.Cut(kv, "=")
				if !ok {
					return fmt.Errorf("--set %q: want section.key=value", kv)
				}
				if err := cfg.Set(k, v); err != nil {
					return err
				}
			}
			if err := cfg.Validate(); err != nil {
				return err
			}
			logger, err := g.logger(cfg.Log)
			if err != nil {
				return err
			}
			reg := prometheus.NewRegistry()
			reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
			n, err := node.New(cfg, node.Deps{Logger: logger, Registry: reg})
			if err != nil {
				return err
			}
			stopReload := node.WatchSIGHUP(n, logger)
			runErr := n.Run(cmd.Context())
			stopReload()
			closeErr := n.Close()
			logger.Info("node stopped")
			if runErr != nil {
				return runErr
			}
			return closeErr
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&listen, "listen", nil, "p2p listen multiaddrs (replaces p2p.listen)")
	f.StringSliceVar(&bootstrap, "bootstrap", nil, "bootstrap peer multiaddrs ending in /p2p/<id> (replaces p2p.bootstrap)")
	f.StringVar(&apiListen, "api-listen", "", "API listen address host:port (replaces api.listen)")
	f.BoolVar(&salvage, "salvage-store", false, "move damaged store files aside into <home>/store.salvaged-<time> and open what is left")
	f.StringArrayVar(&sets, "set", nil, "override any config key: --set p2p.conn_high=300")
	return cmd
}
