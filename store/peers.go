package store

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
)

const peerPrefix = "peers/"

// KnownPeer is a peer this node has met and may redial after a restart.
type KnownPeer struct {
	Info     peer.AddrInfo
	LastSeen time.Time
}

type knownPeerJSON struct {
	ID         string   `json:"id"`
	Addrs      []string `json:"addrs"`
	LastSeenMs int64    `json:"last_seen_ms"`
}

// SavePeer records (or refreshes) a peer and its addresses.
func (d *DB) SavePeer(kp KnownPeer) error {
	if kp.Info.ID == "" {
		return errors.New("store.SavePeer: empty peer ID")
	}
	rec := knownPeerJSON{ID: kp.Info.ID.String(), LastSeenMs: kp.LastSeen.UnixMilli()}
	for _, a := range kp.Info.Addrs {
		rec.Addrs = append(rec.Addrs, a.String())
	}
	val, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("store.SavePeer: %w", err)
	}
	if err := d.update(func(txn *badger.Txn) error {
		return txn.Set([]byte(peerPrefix+rec.ID), val)
	}); err != nil {
		return fmt.Errorf("store.SavePeer %s: %w", rec.ID, err)
	}
	return nil
}

// ForgetPeer removes a peer from the known set.
func (d *DB) ForgetPeer(id peer.ID) error {
	if err := d.update(func(txn *badger.Txn) error {
		return txn.Delete([]byte(peerPrefix + id.String()))
	}); err != nil {
		return fmt.Errorf("store.ForgetPeer %s: %w", id, err)
	}
	return nil
}

// KnownPeers returns up to limit known peers (all when limit <= 0), most
// recently seen first. Entries that fail to parse are skipped and logged, so
// one damaged entry never hides the rest.
func (d *DB) KnownPeers(limit int) ([]KnownPeer, error) {
	var out []KnownPeer
	err := scanJSON(d, "store.KnownPeers", peerPrefix, func(rec *knownPeerJSON) {
		kp, err := rec.decode()
		if err != nil {
			d.log.Warn("skipping unreadable known-peer entry", "peer", rec.ID, "err", err)
			return
		}
		out = append(out, kp)
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b KnownPeer) int {
		return cmp.Or(b.LastSeen.Compare(a.LastSeen), strings.Compare(string(a.Info.ID), string(b.Info.ID)))
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func (rec *knownPeerJSON) decode() (KnownPeer, error) {
	id, err := peer.Decode(rec.ID)
	if err != nil {
		return KnownPeer{}, err
	}
	kp := KnownPeer{Info: peer.AddrInfo{ID: id}, LastSeen: time.UnixMilli(rec.LastSeenMs)}
	for _, s := range rec.Addrs {
		a, err := ma.NewMultiaddr(s)
		if err != nil {
			continue
		}
		kp.Info.Addrs = append(kp.Info.Addrs, a)
	}
	return kp, nil
}

// PruneKnownPeers keeps the keep most recently seen peers and deletes the
// rest. It returns how many it deleted.
func (d *DB) PruneKnownPeers(keep int) (int, error) {
	all, err := d.KnownPeers(0)
	if err != nil {
		return 0, fmt.Errorf("store.PruneKnownPeers: %w", err)
	}
	if len(all) <= keep {
		return 0, nil
	}
	stale := all[keep:]
	if err := d.update(func(txn *badger.Txn) error {
		for _, kp := range stale {
			if err := txn.Delete([]byte(peerPrefix + kp.Info.ID.String())); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return 0, fmt.Errorf("store.PruneKnownPeers: %w", err)
	}
	return len(stale), nil
}
