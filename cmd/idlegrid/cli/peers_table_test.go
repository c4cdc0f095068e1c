package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/node/api"
)

// TestPeersTableShowsAbuse: the table has a row per peer with its score,
// points and standing; a peer listed only for its ban has no connection
// columns.
func TestPeersTableShowsAbuse(t *testing.T) {
	until := time.Date(2030, 1, 2, 3, 4, 0, 0, time.UTC)
	peers := []api.Peer{
		{ID: "honest", Connected: true, Direction: "Outbound", Idlegrid: true, Addrs: []string{"/ip4/10.0.0.1/tcp/7401"}, GossipScore: 12.5},
		{ID: "noisy", Connected: true, Direction: "Inbound", GossipScore: -3000, Graylisted: true, AbusePoints: 61, LastAbuse: "gossip_reject"},
		{ID: "gone", Banned: true, BannedUntil: &until, BanReason: "gossip_reject"},
	}
	var b strings.Builder
	if err := printPeers(&b, peers); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 4 || !strings.Contains(lines[0], "SCORE") || !strings.Contains(lines[0], "STATE") {
		t.Fatalf("table:\n%s", b.String())
	}
	for i, want := range [][]string{
		{"honest", "Outbound", "idlegrid", "12.5", " ok "},
		{"noisy", "-3000.0", "61.0 (gossip_reject)", "graylisted"},
		{"gone", " - ", "banned until", "(gossip_reject)"},
	} {
		for _, w := range want {
			if !strings.Contains(lines[i+1], w) {
				t.Errorf("row %d %q lacks %q", i+1, lines[i+1], w)
			}
		}
	}
}
