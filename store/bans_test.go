package store

import (
	"testing"
	"time"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/libp2p/go-libp2p/core/peer"
)

// TestBansSurviveReopen: a saved ban is there after a restart; a ban is
// extended, never shortened; ended bans and damaged rows are not loaded.
func TestBansSurviveReopen(t *testing.T) {
	dir := t.TempDir()
	db := openT(t, dir)
	a, b := newPeerID(t), newPeerID(t)
	until := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	if err := db.SaveBan(Ban{Peer: a, Until: until, Reason: "gossip_reject"}); err != nil {
		t.Fatal(err)
	}
	if err := db.SaveBan(Ban{Peer: a, Until: until.Add(-30 * time.Minute), Reason: "shorter"}); err != nil {
		t.Fatal(err)
	}
	if err := db.SaveBan(Ban{Peer: b, Until: time.Now().Add(-time.Second)}); err != nil {
		t.Fatal(err)
	}
	if err := db.db.Update(func(txn *badger.Txn) error {
		return txn.Set([]byte(banPrefix+"garbage"), []byte("{not json"))
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openT(t, dir)
	got, err := db.LoadBans()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Peer != a || !got[0].Until.Equal(until) || got[0].Reason != "gossip_reject" {
		t.Fatalf("LoadBans after reopen = %+v, want only %s until %s", got, a, until)
	}
	longer := until.Add(time.Hour)
	if err := db.SaveBan(Ban{Peer: a, Until: longer, Reason: "dht_invalid_record"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := db.LoadBans(); len(got) != 1 || !got[0].Until.Equal(longer) {
		t.Fatalf("extended ban = %+v, want until %s", got, longer)
	}
	if err := db.SaveBan(Ban{}); err == nil {
		t.Fatal("SaveBan without a peer must fail")
	}
}

// TestBansBounded: past the limit, the bans that end first make room, and
// the ones that end last are kept.
func TestBansBounded(t *testing.T) {
	old := banLimit
	banLimit = 8
	t.Cleanup(func() { banLimit = old })
	db, err := Open("", Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	base := time.Now().Add(time.Hour)
	var ids []peer.ID
	for i := range 20 {
		id := newPeerID(t)
		ids = append(ids, id)
		if err := db.SaveBan(Ban{Peer: id, Until: base.Add(time.Duration(i) * time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := db.LoadBans()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != banLimit {
		t.Fatalf("%d bans kept, want %d", len(got), banLimit)
	}
	for i, b := range got {
		if want := ids[len(ids)-1-i]; b.Peer != want {
			t.Fatalf("ban %d is %s, want %s (the latest ending)", i, b.Peer, want)
		}
	}
}
