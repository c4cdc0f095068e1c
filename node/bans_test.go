package node

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/p2p"
	"github.com/idlegrid/idlegrid/store"
)

// TestBanSurvivesRestart: a peer banned for abuse is still refused after
// the node restarts on the same store, and the peers view says why.
func TestBanSurvivesRestart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	key, _, _ := crypto.GenerateEd25519Key(nil)
	start := func() *Node {
		t.Helper()
		db, err := store.Open(dir, store.Options{LowSpaceMiB: -1})
		if err != nil {
			t.Fatal(err)
		}
		cfg := DefaultConfig(RoleBootstrap)
		cfg.P2P.Listen = []string{"/ip4/127.0.0.1/tcp/0"}
		cfg.P2P.NAT = false
		cfg.API.Listen = ""
		n, err := New(cfg, Deps{Store: db, Identity: key})
		if err != nil {
			_ = db.Close()
			t.Fatal(err)
		}
		return n
	}
	abuserKey, _, _ := crypto.GenerateEd25519Key(nil)
	abuser, _ := peer.IDFromPrivateKey(abuserKey)

	n := start()
	if n.P2P().Blocked(abuser) {
		t.Fatal("a fresh node must not refuse the peer")
	}
	n.P2P().Ban(abuser, time.Hour, p2p.AbuseGossipReject)
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}

	n = start()
	defer func() { _ = n.Close() }()
	if !n.P2P().Blocked(abuser) {
		t.Fatal("the ban did not survive the restart")
	}
	found := false
	for _, e := range n.Trust().Peers() {
		if e.ID != abuser {
			continue
		}
		found = true
		if !e.Banned || e.BanReason != string(p2p.AbuseGossipReject) || !e.BannedUntil.After(time.Now().Add(50*time.Minute)) || e.Connected {
			t.Fatalf("peers view after restart: %+v", e)
		}
	}
	if !found {
		t.Fatal("the banned peer is missing from the peers view after the restart")
	}
}
