package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

func newReloadCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "reload",
		Short: "Make the daemon re-read config.toml: floors, calendar, tiers, offered GPUs, policies and [costs] apply live",
		Long: `Ask the running daemon to re-read config.toml, as SIGHUP does (systemctl reload
idlegrid). The provider's floor_usd, calendar, tiers, offer_gpus, max_duration
and allowed_images and the [costs] section apply at once and the capacity
record is re-advertised; any other changed key is named and waits for a
restart. A file that does not validate changes nothing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			r, err := c.Reload(cmd.Context())
			if err != nil {
				return explain(err, g.home)
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), r)
			}
			w := cmd.OutOrStdout()
			if len(r.Applied)+len(r.Restart) == 0 {
				fmt.Fprintln(w, "no changes")
			}
			if len(r.Applied) > 0 {
				fmt.Fprintf(w, "applied: %s\n", strings.Join(r.Applied, ", "))
			}
			if len(r.Restart) > 0 {
				fmt.Fprintf(w, "need a restart (sudo systemctl restart idlegrid): %s\n", strings.Join(r.Restart, ", "))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
