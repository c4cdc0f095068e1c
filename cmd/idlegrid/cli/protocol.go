package cli

import (
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/idlegrid/idlegrid/node/conformance"
)

func newProtocolCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "protocol",
		Short: "Check a peer against the wire protocol (docs/protocol.md)",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "check ADDR",
		Short: "Dial a peer and report where it departs from docs/protocol.md",
		Long: "check dials the peer at ADDR (a multiaddr ending in /p2p/<peer ID>) from a fresh identity, as another\n" +
			"implementation would, and runs the documented exchanges: identify, digest sync (summary and a page,\n" +
			"every digest opened and verified) and, for providers and renters, a job-protocol refusal. It starts\n" +
			"no node and needs no home directory. It exits non-zero when a check fails.",
		Example: "  idlegrid protocol check /ip4/203.0.113.7/udp/7401/quic-v1/p2p/12D3KooW...",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			report, err := conformance.CheckAddr(cmd.Context(), args[0])
			if err != nil {
				return fmt.Errorf("protocol check: %w", err)
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "CHECK\tRESULT\tDETAIL")
			for _, r := range report {
				result := "ok"
				if !r.OK {
					result = "FAIL"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\n", r.Check, result, r.Detail)
			}
			if err := w.Flush(); err != nil {
				return err
			}
			switch {
			case len(report) > 0 && !report[0].OK:
				return errors.New("protocol check: the peer could not be reached (is the address current, and its port open?)")
			case report.Failed():
				return errors.New("protocol check: the peer departs from docs/protocol.md (see FAIL above)")
			}
			return nil
		},
	})
	return cmd
}
