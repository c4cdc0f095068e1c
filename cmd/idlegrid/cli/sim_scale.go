package cli

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/idlegrid/idlegrid/auction/netmodel"
)

// newSimScaleCmd prints the message-level model of the market at
// internet scale (docs/benchmarks.md, "Market at scale: model").
func newSimScaleCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "scale",
		Short: "Model per-node traffic and bids per RFQ at 1,000 to 100,000 providers (offline)",
		Long: "scale runs the message-level model of sharded RFQs, bounded bidding and capacity digests\n" +
			"for 1,000, 10,000 and 100,000 providers at 1, 10 and 100 RFQs/s network-wide, with message\n" +
			"sizes measured from really sealed messages. It starts no node.",
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			rows, err := netmodel.ScaleTable()
			if err != nil {
				return fmt.Errorf("scale model: %w", err)
			}
			if asJSON {
				enc := json.NewEncoder(g.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(rows)
			}
			_, err = fmt.Fprint(g.stdout, netmodel.FormatTable(rows))
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON instead of a table")
	return cmd
}
