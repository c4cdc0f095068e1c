package nodetest_test

import (
	"context"
	"testing"
	"time"

	dhtpb "github.com/libp2p/go-libp2p-kad-dht/pb"
	record "github.com/libp2p/go-libp2p-record"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node"
	"github.com/idlegrid/idlegrid/node/nodetest"
)

// TestBadCapacityRecordsAreRejectedEverywhere sends forged, expired and
// outdated capacity records straight to every DHT server (bypassing the
// sender's own validation, as a malicious node would) and checks that no
// node stores them and searches keep returning the genuine record. Then a
// provider restarts with an empty store and its new record, with a higher
// sequence number, supersedes the old one.
func TestBadCapacityRecordsAreRejectedEverywhere(t *testing.T) {
	specs := []providerSpec{{"a10", 1, "de", 0.5, true}, {"t4", 2, "fr", 0.25, true}, {"l40s", 1, "nl", 0.9, true}, {"t4", 1, "fi", 0.3, false}}
	c, renter, _ := marketCluster(t, specs)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	providers := c.ByRole(node.RoleProvider)
	victim, attacker := providers[0], providers[1]
	genuine := victim.Node.Provider().Capacity()
	servers := append([]*nodetest.Member{c.Members[0]}, providers...)
	pm, err := dhtpb.NewProtocolMessenger(attacker.Node.P2P().DHT().MessageSender())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()

	// Forged: the attacker's own valid record, stored under the victim's key.
	own := *attacker.Node.Provider().Capacity()
	forged, err := auction.SealCapacity(&own, attacker.Key)
	if err != nil {
		t.Fatal(err)
	}
	// Expired: a record of the attacker's own, correctly signed, but past
	// its expiry.
	expired := *attacker.Node.Provider().Capacity()
	expired.Seq++
	expired.IssuedAtMs = now.Add(-2 * time.Hour).UnixMilli()
	expired.ExpiresAtMs = now.Add(-time.Hour).UnixMilli()
	expiredRaw, err := auction.SealCapacity(&expired, attacker.Key)
	if err != nil {
		t.Fatal(err)
	}
	// Outdated: signed by the victim's real key, but with a lower sequence
	// number than the record it has published.
	older := *genuine
	older.Seq--
	older.GPUs = nil // would advertise no GPUs: a replay that must lose
	older.Runtimes = []string{"wasm"}
	olderRaw, err := auction.SealCapacity(&older, victim.Key)
	if err != nil {
		t.Fatal(err)
	}
	attacks := []struct {
		name  string
		key   string
		value []byte
	}{
		{"forged signer", auction.CapacityKey(victim.Node.ID()), forged},
		{"expired", auction.CapacityKey(attacker.Node.ID()), expiredRaw},
		{"older seq", auction.CapacityKey(victim.Node.ID()), olderRaw},
	}
	for _, a := range attacks {
		for _, s := range servers {
			if s.Node.ID() == attacker.Node.ID() {
				continue
			}
			err := pm.PutValue(ctx, s.Node.ID(), record.MakePutRecord(a.key, a.value))
			if err == nil {
				t.Errorf("%s: member %d (%s) accepted the record", a.name, s.Index, s.Role)
			}
		}
	}
	// Control: the same path accepts a valid record (the attacker's own,
	// newer), so the rejections above are the validator's doing.
	fresh := *attacker.Node.Provider().Capacity()
	fresh.Seq++
	fresh.IssuedAtMs, fresh.ExpiresAtMs = now.UnixMilli(), now.Add(10*time.Minute).UnixMilli()
	freshRaw, err := auction.SealCapacity(&fresh, attacker.Key)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range servers {
		if s.Node.ID() == attacker.Node.ID() {
			continue
		}
		if err := pm.PutValue(ctx, s.Node.ID(), record.MakePutRecord(auction.CapacityKey(attacker.Node.ID()), freshRaw)); err != nil {
			t.Errorf("control: member %d refused a valid record: %v", s.Index, err)
		}
	}
	// Every server still holds (or lacks) only valid records.
	for _, s := range servers {
		if s.Node.ID() == attacker.Node.ID() {
			continue
		}
		rec, _, err := pm.GetValue(ctx, s.Node.ID(), auction.CapacityKey(victim.Node.ID()))
		if err != nil || rec == nil {
			continue // this server is not among the closest and stores nothing
		}
		got, signer, err := auction.OpenCapacity(rec.GetValue())
		if err != nil || signer != victim.Node.ID() || got.Seq != genuine.Seq {
			t.Errorf("member %d stores a bad victim record: seq %v signer %s err %v", s.Index, got, signer, err)
		}
	}
	rec, err := renter.Trust().ProviderRecord(ctx, victim.Node.ID())
	if err != nil || rec.Seq != genuine.Seq || len(rec.GPUs) != 1 {
		t.Fatalf("renter sees %+v, %v; want the genuine record seq %d", rec, err, genuine.Seq)
	}

	// Restart the victim with an empty store: its next record must win.
	if err := c.Restart(victim.Index); err != nil {
		t.Fatal(err)
	}
	if err := nodetest.WaitFor(ctx, "the restarted provider's new record", func() bool {
		rec, err := renter.Trust().ProviderRecord(ctx, victim.Node.ID())
		return err == nil && rec.Seq > genuine.Seq
	}); err != nil {
		t.Fatal(err)
	}
	waitAllAdvertised(t, ctx, c, renter, len(specs))
}
