package p2p_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	dht "github.com/libp2p/go-libp2p-kad-dht"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/p2p"
)

// newerCapValidator accepts "good", cannot read "v2" (a newer release's
// record: errors.ErrUnsupported) and refuses anything else.
type newerCapValidator struct{}

func (newerCapValidator) Validate(_ string, value []byte) error {
	switch string(value) {
	case "good":
		return nil
	case "v2":
		return fmt.Errorf("capacity v2: %w", errors.ErrUnsupported)
	}
	return errors.New("forged")
}
func (newerCapValidator) Select(string, [][]byte) (int, error) { return 0, nil }

// TestOtherVersionsAreNeverCharged: what a newer release sends, which this
// one cannot judge, costs its sender nothing, however much of it comes:
// gossip skipped by the validator (p2p.Skip), DHT records and stream
// requests that fail with errors.ErrUnsupported. Gossipsub does not score
// it either. None of it is delivered or stored.
func TestOtherVersionsAreNeverCharged(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	victim := realNode(t, func(c *p2p.Config) {
		c.DHTOptions = []dht.Option{dht.NamespacedValidator("cap", newerCapValidator{})}
	}, p2p.Deps{})
	var validated, delivered, handled atomic.Int64
	if err := victim.RegisterValidator(p2p.TopicRFQ, func(context.Context, peer.ID, peer.ID, []byte) p2p.Verdict {
		validated.Add(1)
		return p2p.Skip
	}); err != nil {
		t.Fatal(err)
	}
	if err := victim.Subscribe(ctx, p2p.TopicRFQ, func(p2p.Message) { delivered.Add(1) }); err != nil {
		t.Fatal(err)
	}
	victim.HandleRequests("/test/v", "test", p2p.StreamLimits{MaxRequest: 64, MaxResponse: 64, Timeout: 5 * time.Second},
		func(context.Context, peer.ID, []byte) ([]byte, error) {
			handled.Add(1)
			return nil, fmt.Errorf("%w: request v2: %w", p2p.ErrMalformed, errors.ErrUnsupported)
		})

	newer := attacker(t)
	if err := newer.Connect(ctx, addrInfo(victim)); err != nil {
		t.Fatal(err)
	}
	if err := newer.WaitTopicPeer(ctx, p2p.TopicRFQ, victim.ID()); err != nil {
		t.Fatal(err)
	}
	// Within the per-peer rates (DHT PUTs are rate limited more tightly,
	// and over the rate is charged whatever the record).
	const n, puts = 20, 4
	for i := range n {
		if err := newer.Publish(ctx, p2p.TopicRFQ, fmt.Appendf(nil, "rfq v2 #%d", i)); err != nil {
			t.Fatal(err)
		}
		if i < puts {
			if ok, _ := newer.PutRecord(ctx, victim.ID(), "/cap/x", []byte("v2")); ok {
				t.Fatal("a record the validator cannot read was stored")
			}
		}
		if s, err := newer.Write(ctx, victim.ID(), "/test/v", []byte{2, 'v', '2'}); err == nil {
			_ = s.Close()
		}
	}
	eventually(t, "the victim to judge the newer messages and requests", func() bool {
		return validated.Load() >= n/2 && handled.Load() == n
	})
	// An absence cannot be waited for: give a charge in flight (made right
	// after the validator or handler returns) time to land.
	time.Sleep(200 * time.Millisecond)
	if pa := abuseOf(victim, newer.ID()); pa.AbusePoints != 0 || pa.Graylisted || pa.Banned {
		t.Fatalf("the newer peer was charged: %+v", pa)
	}
	if s := victim.GossipScore(newer.ID()); s < 0 {
		t.Fatalf("the newer peer's gossip score is %v", s)
	}
	if d := delivered.Load(); d != 0 {
		t.Fatalf("%d skipped messages were delivered", d)
	}
	if !newer.Connected(victim.ID()) {
		t.Fatal("the newer peer was disconnected")
	}
}
