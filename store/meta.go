package store

import (
	"encoding/binary"
	"errors"
	"fmt"
)

const capacitySeqKey = "meta/capacity-seq"

// CapacitySeq returns the sequence number of the last capacity record this
// node published (0 if none). Records must carry increasing numbers across
// restarts, or the DHT keeps serving the older one.
func (d *DB) CapacitySeq() (uint64, error) {
	v, err := d.getRaw("store.CapacitySeq", capacitySeqKey)
	if errors.Is(err, ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("store.CapacitySeq: %w: capacity seq holds %d bytes", ErrCorrupt, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

// SetCapacitySeq records the sequence number of a published capacity
// record, durably, before the record leaves the node.
func (d *DB) SetCapacitySeq(seq uint64) error {
	return d.putRaw("store.SetCapacitySeq", capacitySeqKey, binary.BigEndian.AppendUint64(nil, seq), true)
}

// sync flushes badger's write-ahead log, for state a crash must not lose.
func (d *DB) sync() error { return d.db.Sync() }
