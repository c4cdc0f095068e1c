package trust

import (
	"cmp"
	"slices"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/store"
)

// maxFraudsForGood bounds the proofs a node keeps for good. A proof
// against a provider this node checked a record of is kept for good, but
// such providers are not scarce: a key with a capacity record put in the
// DHT gets through digest admission, and its own equivocation proves it
// a cheat. Unbounded, every such key would be a row in every node's
// store, an entry in its blocklist and a proof in each reputation fold,
// for ever. Real cheats are rare (they lose what they earned), so 8,192
// leaves room for years of them.
const maxFraudsForGood = 1 << 13

// makeRoomForGood is called before a proof against offender is stored
// for good. With t.forGoodFrauds proofs kept for good already (offender's
// not among them), the ones that count least here make room: kept
// strangerFraudFor from now, as a stranger's proof is, and their
// offenders refused as long. Least is a provider this node never dealt
// with itself (no receipt it issued or was issued), and among those the
// proof stored longest ago: a cheat this node dealt with goes only after
// every one it did not, however many keys prove themselves cheats, and a
// flood of them pushes out old proofs first, whose offenders' peers keep them for good
// and repeat them (fraud_repeat.go), so this node hears them again.
func (t *Trust) makeRoomForGood(offender string) {
	rows, err := t.db.FraudRows()
	if err != nil {
		t.log.Warn("list fraud proofs", "err", err)
		return
	}
	forGood := slices.DeleteFunc(rows, func(r store.FraudRow) bool { return !r.Until.IsZero() })
	if slices.ContainsFunc(forGood, func(r store.FraudRow) bool { return r.Peer == offender }) ||
		len(forGood) < t.forGoodFrauds {
		return
	}
	dealt := t.receipts.ownProviders()
	slices.SortFunc(forGood, func(a, b store.FraudRow) int {
		if da, db := dealt[a.Peer], dealt[b.Peer]; da != db {
			if da {
				return 1
			}
			return -1
		}
		return cmp.Compare(a.Stored, b.Stored)
	})
	for _, r := range forGood[:len(forGood)-t.forGoodFrauds+1] {
		if err := t.db.DemoteFraud(r.Peer, strangerFraudFor, t.strangerFrauds); err != nil {
			t.log.Warn("demote fraud proof", "offender", r.Peer, "err", err)
			continue
		}
		t.fraudsDemoted.Inc()
		if id, err := peer.Decode(r.Peer); err == nil {
			t.p2p.Demote(id, strangerFraudFor)
		}
	}
}
