package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	badger "github.com/dgraph-io/badger/v4"
)

// The reads and writes every kind of record goes through: raw bytes or
// JSON, one key or the keys under a prefix. op names the caller's
// operation in errors ("store.PutLease").

func (d *DB) putRaw(op, key string, raw []byte, sync bool) error {
	if err := d.update(func(txn *badger.Txn) error { return txn.Set([]byte(key), raw) }); err != nil {
		return fmt.Errorf("%s %s: %w", op, key, err)
	}
	if sync {
		if err := d.sync(); err != nil {
			return fmt.Errorf("%s %s: sync: %w", op, key, err)
		}
	}
	return nil
}

func (d *DB) putJSON(op, key string, v any, sync bool) error {
	val, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return d.putRaw(op, key, val, sync)
}

// putTTL stores raw for ttl, after which badger drops it; not synced (what
// expires is what others told us, and can be told again).
func (d *DB) putTTL(op, key string, raw []byte, ttl time.Duration) error {
	err := d.update(func(txn *badger.Txn) error {
		return txn.SetEntry(badger.NewEntry([]byte(key), raw).WithTTL(ttl))
	})
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

// getRaw returns a copy of the value under key: ErrNotFound, or ErrCorrupt
// for a value over maxRecord.
func (d *DB) getRaw(op, key string) ([]byte, error) {
	var out []byte
	err := d.view(func(txn *badger.Txn) error {
		item, err := txn.Get([]byte(key))
		if errors.Is(err, badger.ErrKeyNotFound) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		if item.ValueSize() > maxRecord {
			return fmt.Errorf("%w: %d-byte value", ErrCorrupt, item.ValueSize())
		}
		out, err = item.ValueCopy(nil)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", op, key, err)
	}
	return out, nil
}

func (d *DB) getJSON(op, key string, v any) error {
	raw, err := d.getRaw(op, key)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%s %s: %w", op, key, err)
	}
	return nil
}

// scan calls each with the items under prefix, in key order, starting at
// the key from (nil: the first), until each returns false or an error.
func (d *DB) scan(prefix, from []byte, each func(*badger.Item) (bool, error)) error {
	return d.view(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: true, Prefix: prefix})
		defer it.Close()
		// Seek(nil) is Rewind: the first key under the prefix.
		for it.Seek(from); it.Valid(); it.Next() {
			more, err := each(it.Item())
			if err != nil || !more {
				return err
			}
		}
		return nil
	})
}

// scanRange returns copies of the values under prefix whose keys lie in
// [from, through] (nil: unbounded), in key order.
func (d *DB) scanRange(prefix, from, through []byte) ([][]byte, error) {
	var out [][]byte
	err := d.scan(prefix, from, func(item *badger.Item) (bool, error) {
		if through != nil && bytes.Compare(item.Key(), through) > 0 {
			return false, nil
		}
		v, err := item.ValueCopy(nil)
		if err != nil {
			return false, err
		}
		out = append(out, v)
		return true, nil
	})
	return out, err
}

// scanRaw returns copies of every value under prefix.
func (d *DB) scanRaw(op, prefix string) ([][]byte, error) {
	out, err := d.scanRange([]byte(prefix), nil, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return out, nil
}

// scanJSON decodes every value under prefix into a new T and passes it to
// add. A damaged entry is logged and skipped, so one bad record never
// hides the others.
func scanJSON[T any](d *DB, op, prefix string, add func(*T)) error {
	err := d.scan([]byte(prefix), nil, func(item *badger.Item) (bool, error) {
		if item.ValueSize() > maxRecord {
			d.log.Warn("skipping oversize entry", "key", string(item.Key()))
			return true, nil
		}
		v := new(T)
		if err := item.Value(func(b []byte) error { return json.Unmarshal(b, v) }); err != nil {
			d.log.Warn("skipping unreadable entry", "key", string(item.Key()), "err", err)
			return true, nil
		}
		add(v)
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

// idsUnder returns the rest of every key under prefix, reading keys only.
func (d *DB) idsUnder(op, prefix string) ([]string, error) {
	var ids []string
	err := d.view(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte(prefix)})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			ids = append(ids, string(it.Item().Key()[len(prefix):]))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return ids, nil
}

// deleteChunk bounds the deletes of one transaction (badger's
// ErrTxnTooBig).
const deleteChunk = 1000

// deleteUnder removes the keys prefix+id; IDs not stored are no error.
func (d *DB) deleteUnder(op, prefix string, ids []string) error {
	for c := range slices.Chunk(ids, deleteChunk) {
		err := d.update(func(txn *badger.Txn) error {
			for _, id := range c {
				if err := txn.Delete([]byte(prefix + id)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
	}
	return nil
}
