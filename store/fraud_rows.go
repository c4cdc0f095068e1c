package store

import (
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// FraudRow is one stored fraud proof as the bounds on them read it: whom
// it is against, and no value.
type FraudRow struct {
	Peer string
	// Stored orders the rows by when they were last written (badger's
	// commit version): lower is older.
	Stored uint64
	// Until is when a proof stored for a while (PutFraudFor) is dropped;
	// zero for one stored for good (PutFraud).
	Until time.Time
}

// FraudRows lists every stored fraud proof, keys only: the ones stored
// for good and those stored for a while.
func (d *DB) FraudRows() ([]FraudRow, error) {
	var out []FraudRow
	err := d.view(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte(fraudPrefix)})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			item := it.Item()
			r := FraudRow{Peer: string(item.Key()[len(fraudPrefix):]), Stored: item.Version()}
			if exp := item.ExpiresAt(); exp != 0 {
				r.Until = time.Unix(int64(exp), 0)
			}
			out = append(out, r)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store.FraudRows: %w", err)
	}
	return out, nil
}

// DemoteFraud keeps the proof stored for good against peer only for ttl
// from now, among the proofs stored for a while (at most limit of them,
// as PutFraudFor keeps them). ErrNotFound: no proof stored for good
// against peer.
func (d *DB) DemoteFraud(peer string, ttl time.Duration, limit int) error {
	key := []byte(fraudPrefix + peer)
	err := d.update(func(txn *badger.Txn) error {
		raw, err := fraudForGoodIn(txn, key)
		if err != nil {
			return err
		}
		return putFraudFor(txn, key, raw, ttl, limit)
	})
	if err != nil {
		return fmt.Errorf("store.DemoteFraud %s: %w", peer, err)
	}
	return nil
}
