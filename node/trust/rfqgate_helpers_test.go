package trust

import (
	"context"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/p2p"
)

// validate is the gate on the legacy RFQ topic, as the tests call it.
func (g *RFQGate) validate(ctx context.Context, from, signer peer.ID, data []byte) p2p.Verdict {
	v, _ := g.Validator(p2p.TopicRFQ)(ctx, from, signer, data)
	return v
}
