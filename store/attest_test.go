package store

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestChainEntriesNeverReplaced(t *testing.T) {
	db := openT(t, t.TempDir())
	for seq := range uint64(5) {
		if _, err := db.PutChainEntry("prov", seq, []byte{byte(seq)}, seq == 4); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.PutChainEntry("other", 2, []byte("x"), false); err != nil {
		t.Fatal(err)
	}
	// The same bytes again is fine (gossip repeats).
	if ex, err := db.PutChainEntry("prov", 2, []byte{2}, false); err != nil || !bytes.Equal(ex, []byte{2}) {
		t.Fatalf("same bytes: %v %v", ex, err)
	}
	// Different bytes for a stored seq: refused, and the stored ones
	// returned for the equivocation proof.
	ex, err := db.PutChainEntry("prov", 2, []byte{9}, false)
	if !errors.Is(err, ErrConflict) || len(ex) != 1 || ex[0] != 2 {
		t.Fatalf("conflict: %v %v", ex, err)
	}
	got, err := db.ChainEntries("prov", 1, 3)
	if err != nil || len(got) != 3 || got[0][0] != 1 || got[2][0] != 3 {
		t.Fatalf("range: %v %v", got, err)
	}
	if all, _ := db.ChainEntries("prov", 0, ^uint64(0)); len(all) != 5 {
		t.Fatalf("all entries of prov: %d", len(all))
	}
}

func TestTrustRecordsSurviveReopen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	db, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(db.PutVoucher("lease-1", []byte("v1")))
	must(db.PutVoucher("lease-1", []byte("v2"))) // cumulative: the latest wins
	must(db.PutReceipt("r1", []byte("receipt")))
	must(db.PutFraud("peer", []byte("proof")))
	must(db.PutChainHead([]byte("head")))
	must(db.ObserveHeartbeat("prov", 1000, 10))
	must(db.ObserveHeartbeat("prov", 61_000, 10))
	must(db.Close())
	if db, err = Open(dir, Options{}); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if v, err := db.Voucher("lease-1"); err != nil || string(v) != "v2" {
		t.Fatalf("voucher %q %v", v, err)
	}
	if _, err := db.Voucher("nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing voucher: %v", err)
	}
	if ids, err := db.ReceiptIDs(); err != nil || !slices.Equal(ids, []string{"r1"}) {
		t.Fatalf("receipt IDs %q %v", ids, err)
	}
	if r, err := db.Receipt("r1"); err != nil || string(r) != "receipt" {
		t.Fatalf("receipt %q %v", r, err)
	}
	must(db.DeleteReceipts([]string{"r1", "never-stored"}))
	if ids, _ := db.ReceiptIDs(); len(ids) != 0 {
		t.Fatalf("receipt IDs after the delete: %q", ids)
	}
	if _, err := db.Receipt("r1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted receipt: %v", err)
	}
	if fs, _ := db.Frauds(); len(fs) != 1 {
		t.Fatalf("frauds %d", len(fs))
	}
	if h, err := db.ChainHead(); err != nil || string(h) != "head" {
		t.Fatalf("head %q %v", h, err)
	}
	us, _ := db.Uptimes()
	if len(us) != 1 || us[0].Seen != 2 || us[0].FirstMs != 1000 || us[0].LastMs != 61_000 {
		t.Fatalf("uptime %+v", us)
	}
}

// TestFraudProofsForAWhileAreBounded: proofs stored for a while make room
// for a new one past the limit, the ones ending first going; a proof
// stored for good is neither replaced by one for a while nor counted.
func TestFraudProofsForAWhileAreBounded(t *testing.T) {
	db, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.PutFraud("forever", []byte("proof")); err != nil {
		t.Fatal(err)
	}
	if err := db.PutFraudFor("forever", []byte("other"), time.Hour, 2); err != nil {
		t.Fatal(err)
	}
	for i, ttl := range []time.Duration{3 * time.Hour, time.Hour, 2 * time.Hour} {
		if err := db.PutFraudFor(fmt.Sprint("stranger-", i), []byte(fmt.Sprint("proof-", i)), ttl, 2); err != nil {
			t.Fatal(err)
		}
	}
	// stranger-1 ends first and made room for stranger-2.
	if got, want := storedFrauds(t, db), map[string]bool{"proof": true, "proof-0": true, "proof-2": true}; !maps.Equal(got, want) {
		t.Fatalf("stored %v, want %v", got, want)
	}
	// One offender's proof for good is read alone; a proof for a while
	// is not one.
	if raw, err := db.FraudForGood("forever"); err != nil || string(raw) != "proof" {
		t.Errorf("FraudForGood(forever) = %q, %v", raw, err)
	}
	for _, p := range []string{"stranger-0", "nobody"} {
		if _, err := db.FraudForGood(p); !errors.Is(err, ErrNotFound) {
			t.Errorf("FraudForGood(%s): %v, want not found", p, err)
		}
	}
}

// TestFraudRowsAndDemote: FraudRows lists every proof with when it was
// stored and, for one stored for a while, when it goes; DemoteFraud turns
// a proof for good into one for a while, within the bound on those, and
// refuses one that is not stored for good.
func TestFraudRowsAndDemote(t *testing.T) {
	db := openT(t, t.TempDir())
	for _, p := range []string{"old", "new"} {
		if err := db.PutFraud(p, []byte("proof-"+p)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.PutFraudFor("stranger", []byte("proof-stranger"), time.Hour, 2); err != nil {
		t.Fatal(err)
	}
	rows, err := db.FraudRows()
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]FraudRow{}
	for _, r := range rows {
		by[r.Peer] = r
	}
	if len(by) != 3 || !by["old"].Until.IsZero() || !by["new"].Until.IsZero() || by["old"].Stored >= by["new"].Stored ||
		by["stranger"].Until.Before(time.Now().Add(59*time.Minute)) {
		t.Fatalf("rows %+v: want old and new for good, old stored first, stranger for an hour", rows)
	}
	if err := db.DemoteFraud("old", 2*time.Hour, 2); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"old", "stranger", "nobody"} {
		if err := db.DemoteFraud(p, time.Hour, 2); !errors.Is(err, ErrNotFound) {
			t.Errorf("DemoteFraud(%s): %v, want not found", p, err)
		}
	}
	// The demoted proof keeps its bytes and counts in the bound of two
	// for a while: a third proof for a while pushes out the stranger's,
	// which ends first.
	if err := db.PutFraudFor("another", []byte("proof-another"), 3*time.Hour, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := db.FraudForGood("old"); !errors.Is(err, ErrNotFound) {
		t.Errorf("FraudForGood(old) after its demotion: %v, want not found", err)
	}
	if got, want := storedFrauds(t, db), map[string]bool{"proof-old": true, "proof-new": true, "proof-another": true}; !maps.Equal(got, want) {
		t.Fatalf("stored %v, want %v", got, want)
	}
}

// storedFrauds is the set of stored fraud proofs' bytes.
func storedFrauds(t *testing.T, db *DB) map[string]bool {
	t.Helper()
	raws, err := db.Frauds()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, r := range raws {
		got[string(r)] = true
	}
	return got
}
