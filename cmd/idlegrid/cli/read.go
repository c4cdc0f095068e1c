package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/idlegrid/idlegrid/node"
	"github.com/idlegrid/idlegrid/node/api"
	"github.com/idlegrid/idlegrid/node/words"
)

func newIDCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "id",
		Short: "Show the running node's peer ID and dialable addresses",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			id, err := c.ID(cmd.Context())
			if err != nil {
				return explain(err, g.home)
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), id)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "peer ID: %s\nrole:    %s\nversion: %s\n", id.PeerID, id.Role, id.Version)
			for _, a := range id.Addrs {
				fmt.Fprintf(w, "addr:    %s\n", a)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newStatusCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the running node's health: readiness, routing table, peers, topics",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			st, err := c.Status(cmd.Context())
			if err != nil {
				return explain(err, g.home)
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), st)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintf(tw, "role\t%s\n", st.Role)
			fmt.Fprintf(tw, "peer ID\t%s\n", st.PeerID)
			fmt.Fprintf(tw, "version\t%s\n", st.Version)
			fmt.Fprintf(tw, "ready\t%v\n", st.Ready)
			for _, why := range st.NotReady {
				fmt.Fprintf(tw, "  why\t%s\n", why)
			}
			fmt.Fprintf(tw, "uptime\t%s\n", words.Duration(time.Duration(st.UptimeSeconds)*time.Second))
			fmt.Fprintf(tw, "routing table\t%d peers\n", st.RoutingTable)
			fmt.Fprintf(tw, "connected\t%d peers\n", st.ConnectedPeers)
			fmt.Fprintf(tw, "listen\t%s\n", strings.Join(st.ListenAddrs, " "))
			if len(st.ObservedAddrs) > 0 {
				fmt.Fprintf(tw, "observed\t%s\n", strings.Join(st.ObservedAddrs, " "))
			}
			fmt.Fprintf(tw, "reachability\t%s: %s\n", st.Reachability.State, st.Reachability.Detail)
			v := st.MarketView
			fmt.Fprintf(tw, "market view\t%d providers backed (%d proven, %d silent), %d held\n", v.Backed, v.Proven, v.Silent, v.Held)
			for _, t := range sortedKeys(st.TopicPeers) {
				fmt.Fprintf(tw, "topic %s\t%d peers\n", t, st.TopicPeers[t])
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newPeersCmd(g *globals) *cobra.Command {
	var asJSON, quiet bool
	cmd := &cobra.Command{
		Use:   "peers",
		Short: "List the running node's peers: connected, charged for abuse, or banned",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			peers, err := c.Peers(cmd.Context())
			if err != nil {
				return explain(err, g.home)
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), peers)
			}
			if quiet {
				return printIDs(cmd.OutOrStdout(), peers, func(p api.Peer) string { return p.ID })
			}
			return printPeers(cmd.OutOrStdout(), peers)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	quietFlag(cmd, &quiet, "peer IDs")
	return cmd
}

func newVersionCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the idlegrid version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := node.FullVersion()
			if asJSON {
				return printJSON(cmd.OutOrStdout(), map[string]string{"version": v})
			}
			fmt.Fprintln(cmd.OutOrStdout(), "idlegrid", v)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
