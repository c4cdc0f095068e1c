package trust

import (
	"context"
	"sync"
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
//   - a provider's heartbeat: a telemetry chain entry (no other entry),
//     one per provider and heartbeat slot (attest.BeatSlot; a later entry
//     of a slot already heard, or one of an earlier slot, is withheld:
//     dropped uncharged);
//   - an award summary whose model belongs on the shard: a CPU lease's on
//     the CPU shard, a GPU lease's on any GPU shard (an RFQ for "h100"
//     goes to gpu/h100 and gpu/h100-nvl, and its summary to both, so the
//     losing bidders of either release their holds);
//   - a lease's receipt of a provider this node checked a record of, that
//     the receipt book would keep (a receipt lighter than its pair's 16
//     heaviest, or than everything held when the book is full, is
//     withheld; so is one of a provider nobody checked: a claim with no
//     evidence behind it, and free to make).
//
// Anything else is rejected, abandon notes too (they stay on the
// network-wide idlegrid/attest/1: a renter can post to any shard); a
// record of another release is skipped (docs/protocol.md §5.1).
// Delivered messages go to OnAttest.
func (t *Trust) ValidateShardAttest(topic string) p2p.RecordValidator {
	st, err := auction.ParseShardTopic(topic)
	return func(_ context.Context, _, signer peer.ID, data []byte) (p2p.Verdict, any) {
		if err != nil || st.Kind != auction.ShardTopicAttest {
			return p2p.Reject, nil
		}
		m := openAttestMessage(data)
		if m.kind == attestUnknown && attestFromOtherVersion(data) {
			return p2p.Skip, nil
		}
		if !attestSignedBy(m.author, signer) || !onAttestTopic(m.kind, m.rec, st) {
			return p2p.Reject, nil
		}
		if time.UnixMilli(m.atMs).After(t.now().Add(MaxClockSkew)) {
			return p2p.Ignore, nil
		}
		if e, ok := m.rec.(*attest.Entry); ok && !t.beats.admit(e.Provider, attest.BeatSlot(e.Provider, e.AtMs, t.cfg.BeatEvery), e.Seq) {
			// Dropped, not passed on, and charged to nobody: a provider
			// whose network setting (p2p.telemetry_gossip_every) is
			// shorter than this node's sends such heartbeats honestly.
			return p2p.Withhold, nil
		}
		if rc, ok := m.rec.(*attest.Receipt); ok {
			why := receiptDropUnbacked
			if t.everBacked(rc.Provider) {
				why = t.receipts.refusal(attest.RecordID(data).String(), receiptEvidenceOf(rc, m.voucher))
			}
			if why != "" {
				// Valid, but not what this node keeps (receipt_book.go):
				// not passed on, charged to nobody, counted.
				t.receiptsDropped.WithLabelValues(why).Inc()
				return p2p.Withhold, nil
			}
		}
		return p2p.Accept, m
	}
}

// maxUptimeRows bounds the providers whose heartbeats a node keeps
// counting (store.ObserveHeartbeat): uptime is kept for good, and a key
// whose capacity record was checked is cheap to make. 131,072 is more
// providers than one node's shards hold at 100,000 in the network.
const maxUptimeRows = 1 << 17

// maxBeatProviders bounds the providers beatSlots remembers; past it, it
// starts over (a flood of fresh keys: what is lost is one slot's bound).
const maxBeatProviders = 1 << 17

// beatSlots remembers the slot and seq of each provider's last admitted
// heartbeat, so a node admits (and passes on) one per provider and slot:
// a provider's gossip costs every node of its shards one entry per slot,
// whatever it sends.
type beatSlots struct {
	mu   sync.Mutex
	last map[string]beatSeen
}

type beatSeen struct {
	slot int64
	seq  uint64
}

// admit reports whether a heartbeat of provider in slot, with seq, is
// admitted: the first of a later slot than the last admitted, or the same
// seq again (the same entry from another shard's topic, or a second entry
// for one seq, which is equivocation and must reach observeEntry).
func (b *beatSlots) admit(provider string, slot int64, seq uint64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	seen, ok := b.last[provider]
	switch {
	case ok && seq == seen.seq:
		return true
	case ok && slot <= seen.slot:
		return false
	}
	if b.last == nil || !ok && len(b.last) >= maxBeatProviders {
		b.last = map[string]beatSeen{}
	}
	b.last[provider] = beatSeen{slot: slot, seq: seq}
	return true
}

// onAttestTopic reports whether an opened attest record belongs on shard
// topic st. On a lot topic (docs/protocol.md §3.6) a heartbeat or receipt
// must be of a provider of the lot; a summary may be on any lot of its
// shard, since it closes the auction for the bidders of every lot the RFQ
// went to.
func onAttestTopic(kind attestKind, rec any, st auction.ShardTopic) bool {
	switch kind {
	case attestEntry:
		e := rec.(*attest.Entry)
		return e.Telemetry != nil && st.Holds(e.Provider)
	case attestSummary:
		ms, ok := auction.ModelShard(rec.(*auction.AwardSummary).Model)
		return ok && (ms == st.Shard || ms != auction.ShardCPU && st.Shard != auction.ShardCPU)
	case attestReceipt:
		return st.Holds(rec.(*attest.Receipt).Provider)
	}
	return false
}
