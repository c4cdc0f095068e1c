package store

import (
	"encoding/binary"
	"errors"
	"fmt"

	badger "github.com/dgraph-io/badger/v4"
)

const capacitySeqKey = "meta/capacity-seq"

// CapacitySeq returns the sequence number of the last capacity record this
// node published (0 if none). Records must carry increasing numbers across
// restarts, or the DHT keeps serving the older one.
func (d *DB) CapacitySeq() (uint64, error) {
	var seq uint64
	err := d.view(func(txn *badger.Txn) error {
		item, err := txn.Get([]byte(capacitySeqKey))
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		return item.Value(func(v []byte) error {
			if len(v) != 8 {
				return fmt.Errorf("%w: capacity seq holds %d bytes", ErrCorrupt, len(v))
			}
			seq = binary.BigEndian.Uint64(v)
			return nil
		})
	})
	if err != nil {
		return 0, fmt.Errorf("store.CapacitySeq: %w", err)
	}
	return seq, nil
}

// SetCapacitySeq records the sequence number of a published capacity
// record, durably, before the record leaves the node.
func (d *DB) SetCapacitySeq(seq uint64) error {
	var buf [8]byte
	binary.BigEndian.PutUint64(buf[:], seq)
	err := d.update(func(txn *badger.Txn) error { return txn.Set([]byte(capacitySeqKey), buf[:]) })
	if err != nil {
		return fmt.Errorf("store.SetCapacitySeq: %w", err)
	}
	return d.sync()
}

// sync flushes badger's write-ahead log, for state a crash must not lose.
func (d *DB) sync() error { return d.db.Sync() }
