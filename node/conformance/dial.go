package conformance

import (
	"context"
	"fmt"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/peer"
)

// CheckAddr checks the peer at addr, a multiaddr ending in /p2p/<peer ID>,
// from a throwaway libp2p host with a fresh identity and libp2p's default
// transports and security (TCP and QUIC, Noise and TLS), listening
// nowhere: what any implementation's client would bring.
func CheckAddr(ctx context.Context, addr string) (Report, error) {
	info, err := peer.AddrInfoFromString(addr)
	if err != nil {
		return nil, fmt.Errorf("%q is not a peer address (/ip4/…/tcp/7401/p2p/12D3Koo…): %w", addr, err)
	}
	h, err := libp2p.New(libp2p.NoListenAddrs)
	if err != nil {
		return nil, fmt.Errorf("start a libp2p host: %w", err)
	}
	defer h.Close()
	return Check(ctx, h, *info), nil
}
