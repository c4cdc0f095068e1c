package cli

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/idlegrid/idlegrid/node/api"
)

// printPeers writes the peers table: one row per peer, with its gossip
// score, abuse points and standing (ok, graylisted, banned, blocked).
// Peers listed only for their abuse record or ban are shown as "-" in
// the connection columns.
func printPeers(w io.Writer, peers []api.Peer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PEER\tDIR\tLATENCY\tKIND\tSCORE\tABUSE\tSTATE\tAGENT\tADDR")
	for _, p := range peers {
		kind := "libp2p"
		switch {
		case p.Bootstrap:
			kind = "bootstrap"
		case p.Idlegrid:
			kind = "idlegrid"
		}
		dir, latency, addr := "-", "-", "-"
		if p.Connected {
			dir, latency = p.Direction, fmt.Sprintf("%.1fms", p.LatencyMs)
			if len(p.Addrs) > 0 {
				addr = p.Addrs[0]
			}
		}
		abuse := "-"
		if p.AbusePoints > 0 {
			abuse = fmt.Sprintf("%.1f", p.AbusePoints)
			if p.LastAbuse != "" {
				abuse += " (" + p.LastAbuse + ")"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.1f\t%s\t%s\t%s\t%s\n", p.ID, dir, latency, kind, p.GossipScore, abuse, peerState(p), p.Agent, addr)
	}
	return tw.Flush()
}

// peerState is a peer's standing, worst first.
func peerState(p api.Peer) string {
	switch {
	case p.Blocked:
		return "blocked"
	case p.Banned && p.BannedUntil != nil:
		s := "banned until " + p.BannedUntil.Local().Format("2006-01-02 15:04")
		if p.BanReason != "" {
			s += " (" + p.BanReason + ")"
		}
		return s
	case p.Banned:
		return "banned"
	case p.Graylisted:
		return "graylisted"
	}
	return "ok"
}
