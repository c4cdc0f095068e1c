package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/idlegrid/idlegrid/node"
)

func newInitCmd(g *globals) *cobra.Command {
	var (
		role   string
		region string
		force  bool
	)
	cmd := &cobra.Command{
		Use:   "init --role provider|renter|bootstrap",
		Short: "Create a node home: config, identity, API token and store",
		Long: `Create a node home (default ~/.idlegrid or $IDLEGRID_HOME): a commented
config.toml with every default written out, an Ed25519 identity and an API
token (both mode 0600), and the badger store.

An existing home is never overwritten unless --force; even then the identity
and the store are kept.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			home, err := g.resolveHome()
			if err != nil {
				return err
			}
			cfg := node.DefaultConfig(node.Role(role))
			cfg.Provider.Region = region
			if cfg.Role == node.RoleProvider && region == "" {
				return fmt.Errorf("a provider needs --region: the ISO 3166-1 country code of the host, for example --region de")
			}
			res, err := node.Init(home, node.Role(role), node.InitOptions{Force: force, Config: &cfg})
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "initialised %s node in %s\n", role, res.Home)
			fmt.Fprintf(w, "peer ID: %s", res.PeerID)
			if res.KeptIdentity {
				fmt.Fprint(w, " (existing identity kept)")
			}
			fmt.Fprintf(w, "\nconfig:  %s\n", node.ConfigPath(home))
			return nil
		},
	}
	cmd.Flags().StringVar(&role, "role", "", "node role: provider, renter or bootstrap (required)")
	cmd.Flags().StringVar(&region, "region", "", "providers: ISO 3166-1 country code of the host, e.g. de (required for providers)")
	cmd.Flags().BoolVar(&force, "force", false, "rewrite config and token of an existing home (identity and store are kept)")
	_ = cmd.MarkFlagRequired("role")
	_ = cmd.RegisterFlagCompletionFunc("role", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{"provider", "renter", "bootstrap"}, cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}
