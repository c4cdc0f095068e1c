package p2p

import "github.com/libp2p/go-libp2p/core/peer"

// Subnet names the network p is connected from, as admission groups
// connections (Config.Admission.Subnet, by default the /24 or /48 of the
// remote address): a per-source budget keyed by it is shared by every
// identity an abuser runs from one network. A peer with no connection
// has its own name, the peer ID, so it shares nothing with others.
func (n *Node) Subnet(p peer.ID) string {
	conns := n.host.Network().ConnsToPeer(p)
	if len(conns) == 0 {
		return "peer:" + p.String()
	}
	subnet := n.cfg.Admission.Subnet
	if subnet == nil {
		subnet = DefaultSubnet
	}
	return subnet(p, conns[0].RemoteMultiaddr())
}
