package store

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// Key prefixes of the trust records. Raw values are signed envelopes,
// verified by whoever reads them (the store is not a trust boundary).
const (
	chainPrefix   = "chain/"    // chain/<provider>/<seq, 20 digits>: chain entries
	headKey       = "chainhead" // this provider's own chain head
	voucherPrefix = "vouchers/" // vouchers/<lease>: the latest voucher of a lease
	receiptPrefix = "receipts/" // receipts/<id>: receipts, own and gossiped
	fraudPrefix   = "fraud/"    // fraud/<peer>: the proof against a peer
	uptimePrefix  = "uptime/"   // uptime/<provider>: heartbeat observations
)

// ErrConflict is returned when a write would replace a stored record with
// different bytes under the same key (a chain entry: equivocation).
var ErrConflict = errors.New("a different record is stored under this key")

func chainKey(provider string, seq uint64) []byte {
	return fmt.Appendf(nil, "%s%s/%020d", chainPrefix, provider, seq)
}

// PutChainEntry stores a provider's chain entry durably. An entry already
// stored under the same provider and seq with other bytes is never
// replaced: ErrConflict is returned together with the stored bytes, which
// with raw form an equivocation proof. The same bytes stored already are
// returned as existing with no error, and nothing is written: a caller
// tells a new entry (existing nil) from a copy.
func (d *DB) PutChainEntry(provider string, seq uint64, raw []byte, sync bool) (existing []byte, err error) {
	return d.PutChainEntryTTL(provider, seq, raw, sync, 0)
}

// PutChainEntryTTL is PutChainEntry for entries kept only for ttl (other
// providers' gossiped entries: long enough to catch equivocation); 0
// keeps the entry forever.
func (d *DB) PutChainEntryTTL(provider string, seq uint64, raw []byte, sync bool, ttl time.Duration) (existing []byte, err error) {
	key := chainKey(provider, seq)
	err = d.update(func(txn *badger.Txn) error {
		item, err := txn.Get(key)
		switch {
		case err == nil:
			existing, err = item.ValueCopy(nil)
			if err != nil {
				return err
			}
			if bytes.Equal(existing, raw) {
				return nil
			}
			return ErrConflict
		case !errors.Is(err, badger.ErrKeyNotFound):
			return err
		}
		e := badger.NewEntry(key, raw)
		if ttl > 0 {
			e = e.WithTTL(ttl)
		}
		return txn.SetEntry(e)
	})
	if errors.Is(err, ErrConflict) {
		return existing, fmt.Errorf("store.PutChainEntry %s/%d: %w", provider, seq, err)
	}
	if err != nil {
		return nil, fmt.Errorf("store.PutChainEntry %s/%d: %w", provider, seq, err)
	}
	if existing != nil {
		return existing, nil
	}
	if sync {
		if err := d.sync(); err != nil {
			return nil, fmt.Errorf("store.PutChainEntry: sync: %w", err)
		}
	}
	return nil, nil
}

// ChainEntries returns a provider's stored entries with from <= seq <= to,
// in seq order.
func (d *DB) ChainEntries(provider string, from, to uint64) ([][]byte, error) {
	out, err := d.scanRange([]byte(chainPrefix+provider+"/"), chainKey(provider, from), chainKey(provider, to))
	if err != nil {
		return nil, fmt.Errorf("store.ChainEntries %s: %w", provider, err)
	}
	return out, nil
}

// PutChainHead records this provider's own chain head durably. Callers
// store the entry first, so a crash between the two writes leaves a head
// one entry behind, which the chain recovers from by reading the last
// stored entry.
func (d *DB) PutChainHead(raw []byte) error {
	return d.putRaw("store.PutChainHead", headKey, raw, true)
}

// ChainHead returns this provider's chain head, or ErrNotFound.
func (d *DB) ChainHead() ([]byte, error) { return d.getRaw("store.ChainHead", headKey) }

// PutVoucher stores the latest voucher of a lease durably (it replaces the
// previous one: vouchers are cumulative).
func (d *DB) PutVoucher(lease string, raw []byte) error {
	return d.putRaw("store.PutVoucher", voucherPrefix+lease, raw, true)
}

// Voucher returns the latest voucher of a lease, or ErrNotFound.
func (d *DB) Voucher(lease string) ([]byte, error) {
	return d.getRaw("store.Voucher", voucherPrefix+lease)
}

// Vouchers returns every stored voucher.
func (d *DB) Vouchers() ([][]byte, error) { return d.scanRaw("store.Vouchers", voucherPrefix) }

// PutReceipt stores a receipt durably under its record ID.
func (d *DB) PutReceipt(id string, raw []byte) error {
	return d.putRaw("store.PutReceipt", receiptPrefix+id, raw, true)
}

// PutReceiptTTL stores a receipt for ttl (others' gossiped receipts).
func (d *DB) PutReceiptTTL(id string, raw []byte, ttl time.Duration) error {
	return d.putTTL("store.PutReceiptTTL", receiptPrefix+id, raw, ttl)
}

// ReceiptIDs returns the IDs of every stored receipt, reading keys only:
// a node that keeps the receipts it parsed asks only for the ones it
// lacks (Receipt) and forgets the ones gone.
func (d *DB) ReceiptIDs() ([]string, error) { return d.idsUnder("store.ReceiptIDs", receiptPrefix) }

// Receipt returns one stored receipt, or ErrNotFound.
func (d *DB) Receipt(id string) ([]byte, error) { return d.getRaw("store.Receipt", receiptPrefix+id) }

// DeleteReceipts removes stored receipts; IDs not stored are no error.
func (d *DB) DeleteReceipts(ids []string) error {
	return d.deleteUnder("store.DeleteReceipts", receiptPrefix, ids)
}

// PutFraud stores the proof against a peer durably.
func (d *DB) PutFraud(peer string, raw []byte) error {
	return d.putRaw("store.PutFraud", fraudPrefix+peer, raw, true)
}

// PutFraudFor stores the proof against a peer for ttl, keeping at most
// limit proofs stored that way: past it the ones that end first make
// room. A proof stored for good (PutFraud) is neither replaced nor
// counted.
func (d *DB) PutFraudFor(peer string, raw []byte, ttl time.Duration, limit int) error {
	key := []byte(fraudPrefix + peer)
	err := d.update(func(txn *badger.Txn) error {
		item, err := txn.Get(key)
		switch {
		case err == nil && item.ExpiresAt() == 0:
			return nil // stored for good already
		case err != nil && !errors.Is(err, badger.ErrKeyNotFound):
			return err
		case err != nil:
			return putFraudFor(txn, key, raw, ttl, limit)
		}
		return txn.SetEntry(badger.NewEntry(key, raw).WithTTL(ttl))
	})
	if err != nil {
		return fmt.Errorf("store.PutFraudFor %s: %w", peer, err)
	}
	return nil
}

// putFraudFor stores raw at key for ttl as one more proof kept for a
// while: past limit of those, the ones that end first make room.
func putFraudFor(txn *badger.Txn, key, raw []byte, ttl time.Duration, limit int) error {
	if err := makeRoom(txn, fraudPrefix, limit); err != nil {
		return err
	}
	return txn.SetEntry(badger.NewEntry(key, raw).WithTTL(ttl))
}

// Frauds returns every stored fraud proof.
func (d *DB) Frauds() ([][]byte, error) { return d.scanRaw("store.Frauds", fraudPrefix) }

// FraudsForGood returns the fraud proofs stored for good (PutFraud), not
// those stored for a while (PutFraudFor).
func (d *DB) FraudsForGood() ([][]byte, error) {
	var out [][]byte
	err := d.scan([]byte(fraudPrefix), nil, func(item *badger.Item) (bool, error) {
		if item.ExpiresAt() != 0 {
			return true, nil
		}
		v, err := item.ValueCopy(nil)
		if err != nil {
			return false, err
		}
		out = append(out, v)
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("store.FraudsForGood: %w", err)
	}
	return out, nil
}

// FraudForGood returns the proof stored for good (PutFraud) against
// peer, or ErrNotFound when there is none (or only one stored for a
// while, PutFraudFor).
func (d *DB) FraudForGood(peer string) ([]byte, error) {
	var out []byte
	err := d.view(func(txn *badger.Txn) (err error) {
		out, err = fraudForGoodIn(txn, []byte(fraudPrefix+peer))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store.FraudForGood %s: %w", peer, err)
	}
	return out, nil
}

// fraudForGoodIn reads the proof stored for good at key within txn, or
// ErrNotFound.
func fraudForGoodIn(txn *badger.Txn, key []byte) ([]byte, error) {
	item, err := txn.Get(key)
	switch {
	case errors.Is(err, badger.ErrKeyNotFound):
		return nil, ErrNotFound
	case err != nil:
		return nil, err
	case item.ExpiresAt() != 0:
		return nil, ErrNotFound
	case item.ValueSize() > maxRecord:
		return nil, fmt.Errorf("%w: %d-byte value", ErrCorrupt, item.ValueSize())
	}
	return item.ValueCopy(nil)
}
