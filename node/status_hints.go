package node

import (
	"fmt"
)

// noPeersHint says, in the operator's terms, why this node has no peers to
// route through and what to do: the cause is nearly always the bootstrap
// list (empty, or none of it reachable).
func (b apiBackend) noPeersHint() string {
	boot := b.n.cfg.P2P.Bootstrap
	switch {
	case b.n.cfg.Role == RoleBootstrap && len(boot) == 0:
		return "no peer has joined this bootstrap node yet: give other nodes its address (idlegrid id) in their p2p.bootstrap"
	case len(boot) == 0:
		return fmt.Sprintf("this node has no bootstrap peers: add a bootstrap peer's address to p2p.bootstrap in %s (or set IDLEGRID_P2P_BOOTSTRAP) and restart", ConfigPath(b.n.cfg.Home))
	default:
		return fmt.Sprintf("this node reached none of its %d bootstrap peers yet: check that they run and that their addresses in p2p.bootstrap are right (idlegrid peers shows who answered)", len(boot))
	}
}

// notReady lists why the node cannot do its job yet, each with what to
// do; empty when it can. status prints them under the ready line.
func (b apiBackend) notReady() []string {
	var out []string
	if !b.n.p2p.Ready() {
		out = append(out, b.noPeersHint())
	}
	if b.n.provider != nil {
		rec := b.n.provider.Capacity()
		switch {
		case rec == nil && b.n.p2p.Ready():
			out = append(out, "the provider has not published its capacity yet (it does within a few seconds of joining)")
		case rec != nil && len(rec.GPUs) == 0 && rec.CPU == nil:
			out = append(out, "this provider offers nothing: no GPU was found and no CPU share is offered (see idlegrid doctor)")
		case rec != nil && len(rec.Runtimes) == 0:
			out = append(out, "this provider runs no jobs: no runtime is available (no Docker engine reached, wasm off; see idlegrid doctor)")
		}
		if low, free := b.n.provider.DiskLow(); low {
			out = append(out, fmt.Sprintf("the disk of %s is nearly full (%d MiB free, store.low_space_mib is %d): not bidding until space is freed",
				b.n.cfg.Home, free>>20, b.n.cfg.Store.LowSpaceMiB))
		}
	}
	return out
}
