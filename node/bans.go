package node

import (
	"github.com/idlegrid/idlegrid/p2p"
	"github.com/idlegrid/idlegrid/store"
)

// banStore adapts the store to p2p.BanStore, so that a peer banned for
// abuse stays banned across a restart.
type banStore struct{ db *store.DB }

func (b banStore) SaveBan(ban p2p.Ban) error {
	return b.db.SaveBan(store.Ban{Peer: ban.Peer, Until: ban.Until, Reason: ban.Reason})
}

func (b banStore) LoadBans() ([]p2p.Ban, error) {
	saved, err := b.db.LoadBans()
	if err != nil {
		return nil, err
	}
	out := make([]p2p.Ban, len(saved))
	for i, s := range saved {
		out[i] = p2p.Ban{Peer: s.Peer, Until: s.Until, Reason: s.Reason}
	}
	return out, nil
}
