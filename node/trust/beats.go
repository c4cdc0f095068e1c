package trust

import (
	"context"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/p2p"
)

// ValidateBeat admits a heartbeat on a shard's beat topic
// (auction.BeatShardPrefix): a telemetry chain entry signed by its
// provider, dated no later than MaxClockSkew ahead. Nothing else belongs
// there, so anything else is rejected; an entry of another release is
// skipped (docs/protocol.md §5.1). Delivered beats go to OnAttest, as
// heartbeats on idlegrid/attest/1 do.
func (t *Trust) ValidateBeat(_ context.Context, _, signer peer.ID, data []byte) p2p.Verdict {
	e, err := attest.OpenEntry(data)
	switch {
	case attest.FromOtherVersion(err):
		return p2p.Skip
	case err != nil || e.Telemetry == nil || e.Provider != signer.String():
		return p2p.Reject
	case time.UnixMilli(e.AtMs).After(t.now().Add(MaxClockSkew)):
		return p2p.Ignore
	}
	return p2p.Accept
}
