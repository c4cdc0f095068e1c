package p2p

import "github.com/libp2p/go-libp2p/core/peer"

// P2PAddrs are the node's dialable addresses, each ending in /p2p/<id>:
// what another node puts in p2p.bootstrap, and what a renter puts in its
// RFQs so that bidders can dial it back.
func (n *Node) P2PAddrs() []string {
	infos, err := peer.AddrInfoToP2pAddrs(&peer.AddrInfo{ID: n.ID(), Addrs: n.AdvertisedAddrs()})
	if err != nil {
		return nil
	}
	out := make([]string, len(infos))
	for i, a := range infos {
		out[i] = a.String()
	}
	return out
}
