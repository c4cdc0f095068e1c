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
		Long: "scale runs the message-level model of sharded RFQs, bounded bidding, capacity digests and\n" +
			"attestation heartbeats for 1,000, 10,000 and 100,000 providers at 1, 10 and 100 RFQs/s\n" +
			"network-wide, with message sizes measured from really sealed messages and gossip costs\n" +
			"calibrated on BenchmarkAuction. It prints the model against the measured runs first, then\n" +
			"the extrapolation, then splits of the traffic at 100,000 providers. It starts no node.",
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			rows, err := netmodel.ScaleTable()
			if err != nil {
				return fmt.Errorf("scale model: %w", err)
			}
			what, err := netmodel.WhatIfs()
			if err != nil {
				return fmt.Errorf("scale model: %w", err)
			}
			if asJSON {
				enc := json.NewEncoder(g.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(struct {
					Runs    []netmodel.Run
					Scale   []netmodel.Row
					WhatIfs []netmodel.Row
				}{netmodel.BenchmarkRuns, rows, what})
			}
			_, err = fmt.Fprintf(g.stdout, "Model against BenchmarkAuction (fitted to the runs marked so, checked against the others):\n\n%s\n"+
				"Extrapolated, for a provider on the largest shard:\n\n%s\n"+
				"At 100,000 providers and 100 RFQs/s, each change on top of the ones above it: how the traffic came down\nto what is built, then splits that are not built:\n\n%s",
				netmodel.FormatRunTable(netmodel.BenchmarkRuns), netmodel.FormatTable(rows), netmodel.FormatWhatIfs(what))
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON instead of tables")
	return cmd
}
