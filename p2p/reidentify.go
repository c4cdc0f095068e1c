package p2p

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/libp2p/go-libp2p/p2p/protocol/identify"
	"github.com/libp2p/go-libp2p/p2p/protocol/identify/pb"
	"github.com/libp2p/go-msgio/pbio"
	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"
	"google.golang.org/protobuf/proto"
)

// Asking a peer for its identify record again, on the connection that is
// open, instead of closing it to have libp2p identify a new one. libp2p
// identifies a connection once, in 5 s, and never retries; a peer that
// answered late stays connected but unknown. Closing and redialling made
// a fresh handshake on both sides for each such peer, and on an
// overloaded network those closes were the largest share of all
// (4,144 of about 9,000 in the first 3.5 minutes of 200 nodes on one
// machine), feeding the overload that made the identifies late.
const (
	// reidentifyTimeout is longer than libp2p's 5 s: the peer is slow,
	// not gone (its connection is open).
	reidentifyTimeout = 30 * time.Second
	// reidentifyMsgSize and reidentifyMsgs bound what is read, as
	// libp2p's identify does (signed records are at most 8 KiB, a
	// response at most 10 parts).
	reidentifyMsgSize = 8 << 10
	reidentifyMsgs    = 10
	// reidentifyMaxProtocols and reidentifyMaxAddrs bound what a peer
	// can make this node store about it.
	reidentifyMaxProtocols = 128
	reidentifyMaxAddrs     = 32
	// reidentifyInFlight bounds the identifies running at once.
	reidentifyInFlight = 8
)

// reidentified is what a second identify learnt of a peer.
type reidentified struct {
	conn      network.Conn
	protocols []protocol.ID
	addrs     []ma.Multiaddr
	agent     string
	version   string
}

// identifyEmitters announce a second identify's result as libp2p's own
// identify would, so that the DHT adds the peer to its routing table and
// the peer book records it.
type identifyEmitters struct {
	completed event.Emitter
	updated   event.Emitter
}

func newIdentifyEmitters(bus event.Bus) (*identifyEmitters, error) {
	completed, err := bus.Emitter(new(event.EvtPeerIdentificationCompleted))
	if err != nil {
		return nil, fmt.Errorf("identify emitter: %w", err)
	}
	updated, err := bus.Emitter(new(event.EvtPeerProtocolsUpdated))
	if err != nil {
		completed.Close()
		return nil, fmt.Errorf("identify emitter: %w", err)
	}
	return &identifyEmitters{completed: completed, updated: updated}, nil
}

func (e *identifyEmitters) Close() {
	e.updated.Close()
	e.completed.Close()
}

// reidentify asks p for its identify record on an open connection and
// records it: its protocols and its listen addresses (filtered by the
// connection's scope, as libp2p does), then announces it.
func (n *Node) reidentify(ctx context.Context, p peer.ID, em *identifyEmitters) error {
	ctx, cancel := context.WithTimeout(ctx, reidentifyTimeout)
	defer cancel()
	got, err := askIdentify(ctx, n.host.NewStream, p)
	if err != nil {
		return fmt.Errorf("reidentify %s: %w", p, err)
	}
	ps := n.host.Peerstore()
	before, _ := ps.GetProtocols(p)
	if err := ps.SetProtocols(p, got.protocols...); err != nil {
		return fmt.Errorf("reidentify %s: %w", p, err)
	}
	// Recently-connected, not connected: this bypasses identify's
	// bookkeeping, which would downgrade a connected TTL at the last
	// disconnect; a connected TTL set here could outlive the peer.
	ps.AddAddrs(p, got.addrs, peerstore.RecentlyConnectedAddrTTL)
	// Stored as identify stores them: the agent marks the peer identified.
	_ = ps.Put(p, "ProtocolVersion", got.version)
	_ = ps.Put(p, agentVersionKey, got.agent)
	added := slices.DeleteFunc(slices.Clone(got.protocols), func(q protocol.ID) bool { return slices.Contains(before, q) })
	_ = em.updated.Emit(event.EvtPeerProtocolsUpdated{Peer: p, Added: added})
	_ = em.completed.Emit(event.EvtPeerIdentificationCompleted{
		Peer: p, Conn: got.conn, ListenAddrs: got.addrs, Protocols: got.protocols,
		AgentVersion: got.agent, ProtocolVersion: got.version,
	})
	return nil
}

// askIdentify opens an identify stream to p and reads its record.
func askIdentify(ctx context.Context, open func(context.Context, peer.ID, ...protocol.ID) (network.Stream, error), p peer.ID) (*reidentified, error) {
	s, err := open(network.WithNoDial(network.WithAllowLimitedConn(ctx, "identify"), "reidentify"), p, identify.ID)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	if d, ok := ctx.Deadline(); ok {
		_ = s.SetDeadline(d)
	}
	mes, err := readIdentify(pbio.NewDelimitedReader(s, reidentifyMsgSize))
	if err != nil {
		s.Reset()
		return nil, err
	}
	got := parseIdentify(mes, s.Conn().RemoteMultiaddr())
	got.conn = s.Conn()
	return got, nil
}

// readIdentify reads an identify response of up to reidentifyMsgs parts.
func readIdentify(r pbio.Reader) (*pb.Identify, error) {
	all := &pb.Identify{}
	for range reidentifyMsgs {
		part := &pb.Identify{}
		switch err := r.ReadMsg(part); {
		case errors.Is(err, io.EOF):
			return all, nil
		case err != nil:
			return nil, fmt.Errorf("read identify: %w", err)
		}
		proto.Merge(all, part)
	}
	return nil, errors.New("read identify: too many parts")
}

// parseIdentify keeps what this node stores of a peer's record: at most
// reidentifyMaxProtocols protocols and reidentifyMaxAddrs well-formed
// addresses of the scope of remote, the connection's far end.
func parseIdentify(mes *pb.Identify, remote ma.Multiaddr) *reidentified {
	protos := protocol.ConvertFromStrings(mes.GetProtocols())
	if len(protos) > reidentifyMaxProtocols {
		protos = protos[:reidentifyMaxProtocols]
	}
	var addrs []ma.Multiaddr
	for _, b := range mes.GetListenAddrs() {
		a, err := ma.NewMultiaddrBytes(b)
		if err != nil {
			continue
		}
		addrs = append(addrs, a)
	}
	addrs = sameScope(addrs, remote)
	if len(addrs) > reidentifyMaxAddrs {
		addrs = addrs[:reidentifyMaxAddrs]
	}
	return &reidentified{protocols: protos, addrs: addrs, agent: mes.GetAgentVersion(), version: mes.GetProtocolVersion()}
}

// sameScope keeps the addresses a peer connected from remote may claim,
// as libp2p's identify does: a public peer's public addresses, a private
// one's non-loopback ones, a loopback one's any.
func sameScope(addrs []ma.Multiaddr, remote ma.Multiaddr) []ma.Multiaddr {
	switch {
	case manet.IsIPLoopback(remote):
		return addrs
	case manet.IsPrivateAddr(remote):
		return ma.FilterAddrs(addrs, func(a ma.Multiaddr) bool { return !manet.IsIPLoopback(a) })
	case manet.IsPublicAddr(remote):
		return ma.FilterAddrs(addrs, manet.IsPublicAddr)
	}
	return addrs
}
