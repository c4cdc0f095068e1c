package p2p

import (
	"cmp"
	"slices"

	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"
)

// P2PAddrs are the node's dialable addresses, each ending in /p2p/<id>:
// what another node puts in p2p.bootstrap, and what a renter puts in its
// RFQs so that bidders can dial it back. A NATed node's relay circuit
// addresses are how others reach it, so they are included; the order is
// public addresses, then circuits, then private ones, then loopback, so
// that a list cut short keeps what works from afar.
func (n *Node) P2PAddrs() []string {
	addrs := slices.Clone(n.host.Addrs())
	slices.SortStableFunc(addrs, func(a, b ma.Multiaddr) int { return cmp.Compare(addrRank(a), addrRank(b)) })
	infos, err := peer.AddrInfoToP2pAddrs(&peer.AddrInfo{ID: n.ID(), Addrs: addrs})
	if err != nil {
		return nil
	}
	out := make([]string, len(infos))
	for i, a := range infos {
		out[i] = a.String()
	}
	return out
}

func addrRank(a ma.Multiaddr) int {
	switch {
	case isCircuit(a):
		return 1
	case manet.IsPublicAddr(a):
		return 0
	case manet.IsIPLoopback(a):
		return 3
	}
	return 2
}
