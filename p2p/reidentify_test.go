package p2p

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/libp2p/go-libp2p/p2p/protocol/identify"
	"github.com/libp2p/go-libp2p/p2p/protocol/identify/pb"
	"github.com/libp2p/go-msgio/pbio"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// identifyFailed makes n's identify of its peer b look failed: b's
// protocols forgotten, b out of the routing table, and the failure event
// libp2p emits.
func identifyFailed(t *testing.T, n, b *Node, negotiated ...protocol.ID) {
	t.Helper()
	ps := n.host.Peerstore()
	known, _ := ps.GetProtocols(b.ID())
	if err := ps.RemoveProtocols(b.ID(), known...); err != nil {
		t.Fatal(err)
	}
	// The peerstore cannot delete a key: a value that is not a string
	// stands for an agent never heard.
	if err := ps.Put(b.ID(), agentVersionKey, nil); err != nil {
		t.Fatal(err)
	}
	if identified(ps, b.ID()) {
		t.Fatal("still counted identified")
	}
	// What this node's own streams would have recorded meanwhile.
	if err := ps.AddProtocols(b.ID(), negotiated...); err != nil {
		t.Fatal(err)
	}
	n.dht.RoutingTable().RemovePeer(b.ID())
	em, err := n.host.EventBus().Emitter(new(event.EvtPeerIdentificationFailed))
	if err != nil {
		t.Fatal(err)
	}
	defer em.Close()
	if err := em.Emit(event.EvtPeerIdentificationFailed{Peer: b.ID()}); err != nil {
		t.Fatal(err)
	}
}

func (n *Node) protocolsOf(b *Node) []string {
	protos, _ := n.host.Peerstore().GetProtocols(b.ID())
	out := make([]string, len(protos))
	for i, p := range protos {
		out[i] = string(p)
	}
	return out
}

// TestFailedIdentifyAskedAgain: a peer whose identify failed is asked
// again on the open connection, not disconnected; its protocols come
// back and the DHT takes it into the routing table again.
func TestFailedIdentifyAskedAgain(t *testing.T) {
	nodes := mockNet(t, 2, nil)
	boot, a := nodes[0], nodes[1]
	inTable := func() bool { return slices.Contains(a.dht.RoutingTable().ListPeers(), boot.ID()) }
	waitFor(t, "the bootstrap peer in the routing table", 20*time.Second, inTable)
	conn := a.host.Network().ConnsToPeer(boot.ID())[0]

	identifyFailed(t, a, boot)
	waitFor(t, "the identify asked again and answered", 20*time.Second, func() bool {
		return testutil.ToFloat64(a.metrics.reasked.WithLabelValues("answered")) >= 1
	})
	waitFor(t, "the bootstrap peer back in the routing table", 20*time.Second, inTable)
	if !slices.Contains(a.protocolsOf(boot), string(DHTProtocol)) {
		t.Fatalf("protocols after asking again: %v, want the DHT's among them", a.protocolsOf(boot))
	}
	if conn.IsClosed() {
		t.Fatal("the connection was closed: want it kept")
	}
}

// TestFailedIdentifyRepairedDespiteNegotiatedProtocols: a peer dialled
// before it registered its identify handler fails identify, and this
// node's gossipsub stream to it, accepted a moment later, records a
// protocol. That is not an identify: the peer is still asked again and
// taken back into the routing table (a CI run's renter once never saw the
// bootstrap peer it dialled 30 ms early).
func TestFailedIdentifyRepairedDespiteNegotiatedProtocols(t *testing.T) {
	nodes := mockNet(t, 2, nil)
	boot, a := nodes[0], nodes[1]
	inTable := func() bool { return slices.Contains(a.dht.RoutingTable().ListPeers(), boot.ID()) }
	waitFor(t, "the bootstrap peer in the routing table", 20*time.Second, inTable)

	identifyFailed(t, a, boot, "/meshsub/1.1.0")
	waitFor(t, "the identify asked again and answered", 20*time.Second, func() bool {
		return testutil.ToFloat64(a.metrics.reasked.WithLabelValues("answered")) >= 1
	})
	waitFor(t, "the bootstrap peer back in the routing table", 20*time.Second, inTable)
	if !identified(a.host.Peerstore(), boot.ID()) {
		t.Fatal("not counted identified after the answer")
	}
}

// TestFailedIdentifyUnansweredKeepsTheConnection: a peer that does not
// answer the second identify either, nor the asks after it, is not
// disconnected while this node knows other peers: a redial would cost a
// handshake on both sides, and a dead connection is closed by the
// keep-alives.
func TestFailedIdentifyUnansweredKeepsTheConnection(t *testing.T) {
	fastReasks(t)
	nodes := mockNet(t, 3, nil)
	boot, a, other := nodes[0], nodes[1], nodes[2]
	// a meets the other peer directly: through the DHT it would only if
	// its first lookup at the bootstrap peer came after the other's
	// (with the next refresh minutes away, this timed out at 20 s and then
	// at a minute on loaded machines). A connected DHT server joins the
	// routing table once identified.
	if err := a.host.Connect(t.Context(), peer.AddrInfo{ID: other.ID(), Addrs: other.host.Addrs()}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a routing table with the other peer", time.Minute, func() bool {
		return slices.Contains(a.dht.RoutingTable().ListPeers(), other.ID())
	})
	conn := unansweringIdentify(t, a, boot)
	waitFor(t, "every ask unanswered", 20*time.Second, func() bool {
		return testutil.ToFloat64(a.metrics.reasked.WithLabelValues("unanswered")) >= reaskAttempts
	})
	if conn.IsClosed() {
		t.Fatal("the connection was closed")
	}
	if got := testutil.ToFloat64(a.metrics.reasked.WithLabelValues("answered")); got != 0 {
		t.Fatalf("%v answers counted from a peer without identify", got)
	}
}

// TestFailedIdentifyUnansweredReconnectsWhenIsolated: when the peer that
// never answers is all this node has (its routing table empty: a newcomer
// whose bootstrap peer was too busy), the connection is closed after the
// last ask and dialled again, so that a new identify can succeed.
func TestFailedIdentifyUnansweredReconnectsWhenIsolated(t *testing.T) {
	fastReasks(t)
	nodes := mockNet(t, 2, nil)
	boot, a := nodes[0], nodes[1]
	// The peer answers the DHT no more than identify, as one too busy
	// would. Were it to answer, the DHT's own refresh of an empty table
	// (a query whose stream records the protocol) could put it back in
	// the table before the last ask, and the node would not be isolated.
	// The test timed out once in CI, on a loaded machine; this and the
	// late push (unansweringIdentify) are the two ways it could.
	boot.host.RemoveStreamHandler(DHTProtocol)
	conn := unansweringIdentify(t, a, boot)
	// At least once: the new connection's identify fails too (the peer
	// still does not answer), so on a loaded machine the next close can
	// come before this looks.
	waitFor(t, "the connection closed as unidentified", 20*time.Second, func() bool {
		return testutil.ToFloat64(a.metrics.connCloses.WithLabelValues(ClosedUnidentified)) >= 1
	})
	waitFor(t, "a new connection to the bootstrap peer", 20*time.Second, func() bool {
		conns := a.host.Network().ConnsToPeer(boot.ID())
		return len(conns) > 0 && conns[0] != conn
	})
}

// fastReasks makes the asks after a failed identify come every 20 ms.
func fastReasks(t *testing.T) {
	was := reaskBackoff
	reaskBackoff = 20 * time.Millisecond
	t.Cleanup(func() { reaskBackoff = was })
}

// unansweringIdentify has b stop answering identify and fails a's
// identify of it; it returns a's connection to b.
func unansweringIdentify(t *testing.T, a, b *Node) network.Conn {
	t.Helper()
	waitFor(t, "connection", 20*time.Second, func() bool {
		return a.host.Network().Connectedness(b.ID()) == network.Connected
	})
	conn := a.host.Network().ConnsToPeer(b.ID())[0]
	// Its push of the change (protocols without identify's) must land
	// first, or it would tell a the protocols again.
	b.host.RemoveStreamHandler(identify.ID)
	waitFor(t, "the push without identify", 20*time.Second, func() bool {
		protos := a.protocolsOf(b)
		return len(protos) > 0 && !slices.Contains(protos, string(identify.ID))
	})
	// No later push may answer for b either: b's host pushes identify
	// again whenever its addresses change, and one arriving after the
	// failure would count b identified and end the asks early.
	a.host.RemoveStreamHandler(identify.IDPush)
	identifyFailed(t, a, b)
	return conn
}

// TestParseIdentifyBounds: what a peer's record can make this node store
// is bounded, and its addresses are those of the connection's scope.
func TestParseIdentifyBounds(t *testing.T) {
	mes := &pb.Identify{}
	for i := range 3 * reidentifyMaxProtocols {
		mes.Protocols = append(mes.Protocols, fmt.Sprintf("/p/%d", i))
	}
	public := ma.StringCast("/ip4/1.2.3.4/udp/4001/quic-v1")
	mes.ListenAddrs = [][]byte{
		ma.StringCast("/ip4/10.0.0.1/tcp/4001").Bytes(), // private: dropped for a public peer
		{0xff, 0x01}, // not an address
		public.Bytes(),
	}
	for i := range 2 * reidentifyMaxAddrs {
		mes.ListenAddrs = append(mes.ListenAddrs, ma.StringCast(fmt.Sprintf("/ip4/1.2.3.%d/tcp/4001", i)).Bytes())
	}
	got := parseIdentify(mes, ma.StringCast("/ip4/5.6.7.8/tcp/1234"))
	if len(got.protocols) != reidentifyMaxProtocols {
		t.Fatalf("%d protocols kept, want %d", len(got.protocols), reidentifyMaxProtocols)
	}
	if len(got.addrs) != reidentifyMaxAddrs || !got.addrs[0].Equal(public) {
		t.Fatalf("addresses kept: %d starting %v, want %d starting %v", len(got.addrs), got.addrs[0], reidentifyMaxAddrs, public)
	}
	if got := parseIdentify(mes, ma.StringCast("/ip4/10.0.0.2/tcp/1")); !got.addrs[0].Equal(ma.StringCast("/ip4/10.0.0.1/tcp/4001")) {
		t.Fatalf("a private peer's private address was dropped: %v", got.addrs[0])
	}
}

// TestReadIdentifyBounds: a response of too many parts, or a part over
// the size limit, is an error.
func TestReadIdentifyBounds(t *testing.T) {
	var buf bytes.Buffer
	w := pbio.NewDelimitedWriter(&buf)
	for range reidentifyMsgs + 1 {
		if err := w.WriteMsg(&pb.Identify{Protocols: []string{"/p"}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := readIdentify(pbio.NewDelimitedReader(&buf, reidentifyMsgSize)); err == nil {
		t.Fatal("too many parts read without error")
	}
	buf.Reset()
	if err := w.WriteMsg(&pb.Identify{AgentVersion: longString(reidentifyMsgSize + 1)}); err != nil {
		t.Fatal(err)
	}
	if _, err := readIdentify(pbio.NewDelimitedReader(&buf, reidentifyMsgSize)); err == nil {
		t.Fatal("a part over the size limit read without error")
	}
}

func longString(n int) *string {
	s := string(bytes.Repeat([]byte("a"), n))
	return &s
}

func FuzzReadIdentify(f *testing.F) {
	var buf bytes.Buffer
	_ = pbio.NewDelimitedWriter(&buf).WriteMsg(&pb.Identify{Protocols: []string{"/p"}, ListenAddrs: [][]byte{ma.StringCast("/ip4/1.2.3.4/tcp/1").Bytes()}})
	f.Add(buf.Bytes())
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, data []byte) {
		mes, err := readIdentify(pbio.NewDelimitedReader(bytes.NewReader(data), reidentifyMsgSize))
		if err != nil {
			return
		}
		got := parseIdentify(mes, ma.StringCast("/ip4/1.2.3.4/tcp/1"))
		if len(got.protocols) > reidentifyMaxProtocols || len(got.addrs) > reidentifyMaxAddrs {
			t.Fatalf("%d protocols, %d addresses kept", len(got.protocols), len(got.addrs))
		}
	})
}
