package trust

import (
	"context"
	"testing"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/p2p"
)

// TestRFQSeenTTLIsTheRouters: the validator's tolerance for late RFQs is
// the seen-cache time gossipsub really uses.
func TestRFQSeenTTLIsTheRouters(t *testing.T) {
	if rfqSeenTTL != pubsub.TimeCacheDuration {
		t.Fatalf("rfqSeenTTL %s, gossipsub's seen-cache time %s", rfqSeenTTL, pubsub.TimeCacheDuration)
	}
}

// TestRFQValidatorTimeliness: through the whole validator, an RFQ whose
// dates no honest relay produces (long expired, dated ahead beyond the
// skew) is rejected, which charges the forwarder; one that just expired
// is withheld (within its forwarder's allowance,
// TestExpiredRFQsAllowancePerPeer); one dated ahead within the skew
// passes.
func TestRFQValidatorTimeliness(t *testing.T) {
	sk, _, _ := crypto.GenerateEd25519Key(nil)
	renter, _ := peer.IDFromPrivateKey(sk)
	now := time.Now()
	probe, _, err := auction.OpenRFQ(sealTestRFQ(t, sk, now))
	if err != nil {
		t.Fatal(err)
	}
	life := time.Duration(probe.ExpiresAtMs-probe.IssuedAtMs) * time.Millisecond
	// expiredBy returns the issue time that makes an RFQ expire `late`
	// before now.
	expiredBy := func(late time.Duration) time.Time { return now.Add(-life - late) }
	tests := []struct {
		name   string
		issued time.Time
		want   p2p.Verdict
	}{
		{"timely", now, p2p.Accept},
		{"ahead within the skew", now.Add(MaxClockSkew / 2), p2p.Accept},
		{"ahead beyond the skew", now.Add(MaxClockSkew + 5*time.Second), p2p.Reject},
		{"just expired", expiredBy(time.Second), p2p.Withhold},
		{"expired within seen-cache time and skew", expiredBy(rfqSeenTTL + MaxClockSkew - 5*time.Second), p2p.Withhold},
		{"stale", expiredBy(rfqSeenTTL + MaxClockSkew + 5*time.Second), p2p.Reject},
		{"long stale", now.Add(-24 * time.Hour), p2p.Reject},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := NewRFQGate(RFQGateDeps{})
			n.seen = auction.NewSeenCache(16)
			data := sealTestRFQ(t, sk, tc.issued)
			if got := n.validate(context.Background(), renter, renter, data); got != tc.want {
				t.Fatalf("verdict %v, want %v", got, tc.want)
			}
		})
	}
}

// TestRFQTimelinessVerdicts: each timeliness class maps to its verdict.
func TestRFQTimelinessVerdicts(t *testing.T) {
	now := time.UnixMilli(1_800_000_000_000)
	ms := func(d time.Duration) int64 { return now.Add(d).UnixMilli() }
	tests := []struct {
		name            string
		issued, expires int64
		want            p2p.Verdict
	}{
		{"timely", ms(-time.Second), ms(time.Minute), p2p.Accept},
		{"expired", ms(-time.Minute), ms(-time.Second), p2p.Ignore},
		{"stale", ms(-time.Hour), ms(-rfqSeenTTL - MaxClockSkew), p2p.Reject},
		{"future", ms(MaxClockSkew + time.Millisecond), ms(time.Hour), p2p.Reject},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rfq := &auction.RFQ{IssuedAtMs: tc.issued, ExpiresAtMs: tc.expires}
			if got := timelinessVerdict(rfq.Timeliness(now, MaxClockSkew, rfqSeenTTL)); got != tc.want {
				t.Fatalf("verdict %v, want %v", got, tc.want)
			}
		})
	}
}

// TestExpiredRFQsAllowancePerPeer: a forwarding peer passes on
// lateRFQsBurst RFQs expired in transit uncharged, then each is ignored
// (the abuse guard's point) until its allowance refills; another peer has
// its own.
func TestExpiredRFQsAllowancePerPeer(t *testing.T) {
	sk, _, _ := crypto.GenerateEd25519Key(nil)
	renter, _ := peer.IDFromPrivateKey(sk)
	relay, _ := peer.Decode("12D3KooWB7iotsqMGzwTNt7jR2h7BSNGLAxfLUBtq7wyTVyzKZDM")
	now := time.Now()
	g := NewRFQGate(RFQGateDeps{Now: func() time.Time { return now }})
	expired := sealTestRFQ(t, sk, now.Add(-auction.RFQExpiryMargin-time.Minute))
	for i := range lateRFQsBurst {
		if _, v := g.Check("t", renter, renter, expired); v != p2p.Withhold {
			t.Fatalf("expired RFQ %d within the allowance: %v, want withhold", i, v)
		}
	}
	if _, v := g.Check("t", renter, renter, expired); v != p2p.Ignore {
		t.Fatalf("past the allowance: %v, want ignore", v)
	}
	if _, v := g.Check("t", relay, renter, expired); v != p2p.Withhold {
		t.Fatalf("another forwarder: %v, want withhold", v)
	}
	now = now.Add(time.Duration(float64(time.Second) / lateRFQsRate))
	if _, v := g.Check("t", renter, renter, expired); v != p2p.Withhold {
		t.Fatalf("after a refill: %v, want withhold", v)
	}
}
