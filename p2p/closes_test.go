package p2p

import (
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/net/connmgr"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestCloseReasonsCounted: a connection this node closes is counted under
// its reason, and the other side counts it as closed by the remote.
func TestCloseReasonsCounted(t *testing.T) {
	nodes := mockNet(t, 2, nil)
	a, b := nodes[0], nodes[1]
	waitFor(t, "connection", 20*time.Second, func() bool {
		return a.host.Network().Connectedness(b.ID()) == network.Connected
	})
	a.closePeer(b.ID(), ClosedSilent)
	closed := func(n *Node, reason string) float64 {
		return testutil.ToFloat64(n.metrics.connCloses.WithLabelValues(reason))
	}
	waitFor(t, "closes counted", 20*time.Second, func() bool {
		return closed(a, ClosedSilent) >= 1 && closed(b, ClosedRemote) >= 1
	})
	if got := closed(a, ClosedRemote); got != 0 {
		t.Fatalf("the closing side counted %v remote closes, want 0", got)
	}
}

// TestConnManagerTrimsAreNoted: the connection manager's trims, which
// libp2p makes out of our sight, are noted as ClosedConnManager.
func TestConnManagerTrimsAreNoted(t *testing.T) {
	closes := newCloseReasons()
	cm, err := connmgr.NewConnManager(1, 1, connmgr.WithGracePeriod(0))
	if err != nil {
		t.Fatal(err)
	}
	newTCPHost := func(opts ...libp2p.Option) host.Host {
		h, err := libp2p.New(append(opts, libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.DisableMetrics())...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = h.Close() })
		return h
	}
	a := newTCPHost(libp2p.ConnectionManager(newReasonedConnManager(cm, closes)))
	reasons := make(chan string, 8)
	a.Network().Notify(&network.NotifyBundle{DisconnectedF: func(_ network.Network, c network.Conn) {
		reasons <- closes.closed(c)
	}})
	for range 3 {
		b := newTCPHost()
		if err := a.Connect(t.Context(), peer.AddrInfo{ID: b.ID(), Addrs: b.Addrs()}); err != nil {
			t.Fatal(err)
		}
	}
	a.ConnManager().TrimOpenConns(t.Context())
	select {
	case r := <-reasons:
		if r != ClosedConnManager {
			t.Fatalf("a trimmed connection's reason is %q, want %q", r, ClosedConnManager)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the connection manager trimmed nothing")
	}
}

// TestMuxerFailuresCounted: yamux's reports are counted by kind.
func TestMuxerFailuresCounted(t *testing.T) {
	var counted []string
	m := &muxerFailures{count: func(kind string) { counted = append(counted, kind) }}
	for _, line := range []string{
		"2026/12/03 11:00:00 [ERR] yamux: keepalive failed: i/o deadline reached\n",
		"2026/12/03 11:00:00 [ERR] yamux: Failed to read header: connection reset\n",
		"2026/12/03 11:00:00 [ERR] yamux: received go away with error code: 4101\n",
		"2026/12/03 11:00:00 [WARN] yamux: backlog exceeded, forcing stream reset\n",
	} {
		if _, err := m.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{MuxerKeepAlive, MuxerRead, MuxerGoAway, MuxerOther}
	if !slices.Equal(counted, want) {
		t.Fatalf("counted %v, want %v", counted, want)
	}
	if m.counts[MuxerKeepAlive] != 1 || len(m.counts) != 4 {
		t.Fatalf("counts %v", m.counts)
	}
}
