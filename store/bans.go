package store

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/libp2p/go-libp2p/core/peer"
)

const banPrefix = "bans/"

// MaxBans bounds the saved bans: a flood of throw-away identities, each
// earning a ban, must not grow the store without end. Past it the bans
// that end first make room.
const MaxBans = 1024

// banLimit is MaxBans; tests lower it.
var banLimit = MaxBans

// maxBanReason bounds the reason kept with a ban (it is a short label).
const maxBanReason = 64

// Ban is a peer the node refuses until a time, for abuse. It is kept
// across restarts; badger drops the row once the ban ends.
type Ban struct {
	Peer   peer.ID
	Until  time.Time
	Reason string
}

type banJSON struct {
	Peer    string `json:"peer"`
	UntilMs int64  `json:"until_ms"`
	Reason  string `json:"reason,omitempty"`
}

// SaveBan records b, or extends the saved ban of b.Peer; a ban is never
// shortened. A ban that has already ended is not saved.
func (d *DB) SaveBan(b Ban) error {
	if b.Peer == "" {
		return errors.New("store.SaveBan: empty peer ID")
	}
	ttl := time.Until(b.Until)
	if ttl <= 0 {
		return nil
	}
	if len(b.Reason) > maxBanReason {
		b.Reason = b.Reason[:maxBanReason]
	}
	key := []byte(banPrefix + b.Peer.String())
	val, err := json.Marshal(banJSON{Peer: b.Peer.String(), UntilMs: b.Until.UnixMilli(), Reason: b.Reason})
	if err != nil {
		return fmt.Errorf("store.SaveBan: %w", err)
	}
	err = d.update(func(txn *badger.Txn) error {
		item, err := txn.Get(key)
		switch {
		case err == nil:
			// Already saved: extend only. Badger keeps the row until its
			// TTL, which is the saved ban's end.
			if item.ExpiresAt() >= uint64(b.Until.Unix()) {
				return nil
			}
		case errors.Is(err, badger.ErrKeyNotFound):
			if err := makeRoom(txn, banPrefix, banLimit); err != nil {
				return err
			}
		default:
			return err
		}
		return txn.SetEntry(badger.NewEntry(key, val).WithTTL(ttl))
	})
	if err != nil {
		return fmt.Errorf("store.SaveBan %s: %w", b.Peer, err)
	}
	return nil
}

// makeRoom deletes the rows under prefix that expire first until a new
// one fits under limit. Rows that never expire are neither counted nor
// deleted. It reads keys and expiry only.
func makeRoom(txn *badger.Txn, prefix string, limit int) error {
	type row struct {
		key []byte
		exp uint64
	}
	var rows []row
	it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte(prefix)})
	for it.Rewind(); it.Valid(); it.Next() {
		if exp := it.Item().ExpiresAt(); exp != 0 {
			rows = append(rows, row{it.Item().KeyCopy(nil), exp})
		}
	}
	it.Close()
	if len(rows) < limit {
		return nil
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].exp < rows[j].exp })
	for _, r := range rows[:len(rows)-limit+1] {
		if err := txn.Delete(r.key); err != nil {
			return err
		}
	}
	return nil
}

// LoadBans returns the bans that have not ended, latest end first. A
// damaged row is skipped and logged.
func (d *DB) LoadBans() ([]Ban, error) {
	now := time.Now()
	var out []Ban
	err := scanJSON(d, "store.LoadBans", banPrefix, func(rec *banJSON) {
		id, err := peer.Decode(rec.Peer)
		if err != nil {
			d.log.Warn("skipping unreadable ban entry", "peer", rec.Peer, "err", err)
			return
		}
		b := Ban{Peer: id, Until: time.UnixMilli(rec.UntilMs), Reason: rec.Reason}
		if b.Until.After(now) {
			out = append(out, b)
		}
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b Ban) int {
		return cmp.Or(b.Until.Compare(a.Until), strings.Compare(string(a.Peer), string(b.Peer)))
	})
	if len(out) > banLimit {
		out = out[:banLimit]
	}
	return out, nil
}
