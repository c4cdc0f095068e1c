package store

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
)

func openT(t *testing.T, dir string) *DB {
	t.Helper()
	db, err := Open(dir, Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func newPeerID(t *testing.T) peer.ID {
	t.Helper()
	_, pub, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	id, err := peer.IDFromPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestOpenLockedIsClearError(t *testing.T) {
	dir := t.TempDir()
	openT(t, dir)
	_, err := Open(dir, Options{})
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open: got %v, want ErrLocked", err)
	}
}

func TestOpenCorruptIsClearErrorAndKeepsFiles(t *testing.T) {
	dir := t.TempDir()
	db := openT(t, dir)
	if err := db.SavePeer(KnownPeer{Info: peer.AddrInfo{ID: newPeerID(t)}, LastSeen: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(dir, "MANIFEST")
	junk := []byte("this is not a badger manifest, it is junk written by a test")
	if err := os.WriteFile(manifest, junk, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Open(dir, Options{})
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open corrupt: got %v, want ErrCorrupt", err)
	}
	got, rerr := os.ReadFile(manifest)
	if rerr != nil || string(got) != string(junk) {
		t.Fatalf("Open must not rewrite a corrupt store's files (read err %v)", rerr)
	}
}

func TestOpenSchemaMismatch(t *testing.T) {
	dir := t.TempDir()
	db := openT(t, dir)
	if err := db.db.Update(func(txn *badger.Txn) error {
		var buf [4]byte
		binary.BigEndian.PutUint32(buf[:], SchemaVersion+1)
		return txn.Set(schemaKey, buf[:])
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	_, err := Open(dir, Options{})
	if !errors.Is(err, ErrSchema) {
		t.Fatalf("got %v, want ErrSchema", err)
	}
}

func TestKnownPeersRoundTripAcrossReopen(t *testing.T) {
	dir := t.TempDir()
	db := openT(t, dir)
	a, b := newPeerID(t), newPeerID(t)
	addr := ma.StringCast("/ip4/127.0.0.1/tcp/7401")
	now := time.UnixMilli(1_800_000_000_000)
	if err := db.SavePeer(KnownPeer{Info: peer.AddrInfo{ID: a, Addrs: []ma.Multiaddr{addr}}, LastSeen: now}); err != nil {
		t.Fatal(err)
	}
	if err := db.SavePeer(KnownPeer{Info: peer.AddrInfo{ID: b}, LastSeen: now.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	// A damaged entry must not hide the good ones.
	if err := db.db.Update(func(txn *badger.Txn) error {
		return txn.Set([]byte(peerPrefix+"garbage"), []byte("{not json"))
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	db = openT(t, dir)
	got, err := db.KnownPeers(0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Info.ID != b || got[1].Info.ID != a {
		t.Fatalf("KnownPeers order/content wrong: %+v", got)
	}
	if len(got[1].Info.Addrs) != 1 || !got[1].Info.Addrs[0].Equal(addr) || !got[1].LastSeen.Equal(now) {
		t.Fatalf("peer a round trip: %+v", got[1])
	}
	if lim, _ := db.KnownPeers(1); len(lim) != 1 {
		t.Fatalf("limit 1 gave %d", len(lim))
	}
	if removed, err := db.PruneKnownPeers(1); err != nil || removed != 1 {
		t.Fatalf("prune: removed %d, %v", removed, err)
	}
	if got, _ := db.KnownPeers(0); len(got) != 1 || got[0].Info.ID != b {
		t.Fatalf("prune must keep the most recent peer: %+v", got)
	}
	if err := db.ForgetPeer(b); err != nil {
		t.Fatal(err)
	}
	if got, _ := db.KnownPeers(0); len(got) != 0 {
		t.Fatalf("after ForgetPeer: %d peers", len(got))
	}
}

func TestClosedStoreErrors(t *testing.T) {
	db, err := Open("", Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	if _, err := db.KnownPeers(0); !errors.Is(err, ErrClosed) {
		t.Fatalf("got %v, want ErrClosed", err)
	}
}

func TestCapacitySeqPersists(t *testing.T) {
	dir := t.TempDir()
	db := openT(t, dir)
	if s, err := db.CapacitySeq(); err != nil || s != 0 {
		t.Fatalf("fresh seq %d %v", s, err)
	}
	if err := db.SetCapacitySeq(42); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	db = openT(t, dir)
	if s, err := db.CapacitySeq(); err != nil || s != 42 {
		t.Fatalf("seq after reopen %d %v", s, err)
	}
}

func TestLeasesAndJobsSurviveReopen(t *testing.T) {
	dir := t.TempDir()
	db := openT(t, dir)
	l := &Lease{ID: "bafy-lease-1", Side: "provider", Award: []byte{1, 2}, GPUs: []string{"GPU-1"}, State: "active", StartsAtMs: 5}
	if err := db.PutLease(l); err != nil {
		t.Fatal(err)
	}
	j := &Job{ID: "bafy-job-1", State: "auctioning", Events: []JobEvent{{AtMs: 1, Kind: "posted", Message: "rfq out"}}, CreatedAtMs: 1}
	if err := db.PutJob(j); err != nil {
		t.Fatal(err)
	}
	if err := db.db.Update(func(txn *badger.Txn) error { return txn.Set([]byte(jobPrefix+"broken"), []byte("{")) }); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	db = openT(t, dir)
	got, err := db.GetLease("bafy-lease-1")
	if err != nil || got.State != "active" || got.GPUs[0] != "GPU-1" {
		t.Fatalf("lease %+v %v", got, err)
	}
	if _, err := db.GetLease("nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing lease: %v", err)
	}
	jobs, err := db.Jobs()
	if err != nil || len(jobs) != 1 || jobs[0].Events[0].Kind != "posted" {
		t.Fatalf("jobs %+v %v", jobs, err)
	}
	leases, err := db.Leases()
	if err != nil || len(leases) != 1 {
		t.Fatalf("leases %+v %v", leases, err)
	}
	if err := db.PutSummary("s1", []byte("env"), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := db.PutSummary("s2", []byte("old"), time.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if s, err := db.Summaries(); err != nil || len(s) != 1 || string(s[0]) != "env" {
		t.Fatalf("summaries %q %v", s, err)
	}
}
