package trust

import (
	"context"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/p2p"
)

// ValidateShardAttest is the validator of a shard's attestation topic
// (auction.AttestShardPrefix). It admits, each signed by its gossip
// author and dated no later than MaxClockSkew ahead:
//
//   - a provider's heartbeat: a telemetry chain entry (no other entry);
//   - an award summary whose model belongs on the shard: a CPU lease's on
//     the CPU shard, a GPU lease's on any GPU shard (an RFQ for "h100"
//     goes to gpu/h100 and gpu/h100-nvl, and its summary to both, so the
//     losing bidders of either release their holds);
//   - a lease's receipt.
//
// Anything else is rejected, abandon notes too (they stay on the
// network-wide idlegrid/attest/1: a renter can post to any shard); a
// record of another release is skipped (docs/protocol.md §5.1).
// Delivered messages go to OnAttest.
func (t *Trust) ValidateShardAttest(topic string) p2p.Validator {
	st, err := auction.ParseShardTopic(topic)
	return func(_ context.Context, _, signer peer.ID, data []byte) p2p.Verdict {
		if err != nil || st.Kind != auction.ShardTopicAttest {
			return p2p.Reject
		}
		kind, rec, author, atMs := openAttestMessage(data)
		if kind == attestUnknown && attestFromOtherVersion(data) {
			return p2p.Skip
		}
		if author != signer.String() || !onAttestShard(kind, rec, st.Shard) {
			return p2p.Reject
		}
		if time.UnixMilli(atMs).After(t.now().Add(MaxClockSkew)) {
			return p2p.Ignore
		}
		return p2p.Accept
	}
}

// onAttestShard reports whether an opened attest record belongs on shard s.
func onAttestShard(kind attestKind, rec any, s auction.Shard) bool {
	switch kind {
	case attestEntry:
		return rec.(*attest.Entry).Telemetry != nil
	case attestSummary:
		ms, ok := auction.ModelShard(rec.(*auction.AwardSummary).Model)
		return ok && (ms == s || ms != auction.ShardCPU && s != auction.ShardCPU)
	case attestReceipt:
		return true
	}
	return false
}
