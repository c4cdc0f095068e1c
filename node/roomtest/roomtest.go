// Package roomtest builds what one room needs to run in a unit test
// without a whole node: peers on a mocknet with real libp2p hosts, each
// with a real p2p layer, an in-memory badger store, a lease book and a
// settable clock. A test builds the room it tests from these parts
// through the room's own Deps, and plays the other side of the protocol
// itself.
package roomtest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	mocknet "github.com/libp2p/go-libp2p/p2p/net/mock"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/p2p"
	"github.com/idlegrid/idlegrid/store"
)

// Clock is a settable clock, safe for concurrent use. Rooms take its Now
// as their Deps.Clock.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock reading t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Peer is one node's parts.
type Peer struct {
	Key    crypto.PrivKey
	ID     peer.ID
	P2P    *p2p.Node
	Store  *store.DB
	Leases *lease.Book
	Clock  *Clock
}

// Peers returns n connected peers sharing one clock (starting now). They
// are closed with the test.
func Peers(tb testing.TB, n int) []*Peer {
	tb.Helper()
	mn := mocknet.New()
	tb.Cleanup(func() { _ = mn.Close() })
	// Whole milliseconds, as records store them.
	clock := NewClock(time.UnixMilli(time.Now().UnixMilli()))
	out := make([]*Peer, n)
	for i := range out {
		sk, _, err := crypto.GenerateEd25519Key(nil)
		if err != nil {
			tb.Fatal(err)
		}
		h, err := mn.AddPeer(sk, ma.StringCast(fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", 20000+i)))
		if err != nil {
			tb.Fatal(err)
		}
		cfg := p2p.DefaultConfig()
		cfg.Identity = sk
		// Shard topics are admitted by name, as the node admits them.
		cfg.TopicPolicy = func(topic string) bool { _, err := auction.ParseShardTopic(topic); return err == nil }
		node, err := p2p.New(cfg, p2p.Deps{Host: h})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { _ = node.Close() })
		db, err := store.Open("", store.Options{InMemory: true})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { _ = db.Close() })
		out[i] = &Peer{Key: sk, ID: h.ID(), P2P: node, Store: db, Leases: lease.NewBook(db, clock.Now), Clock: clock}
	}
	if err := mn.LinkAll(); err != nil {
		tb.Fatal(err)
	}
	if err := mn.ConnectAllButSelf(); err != nil {
		tb.Fatal(err)
	}
	// Every pair has identified each other before a test sets a handler:
	// a protocol added while an identify is in flight reaches the peer by
	// identify's push, which the in-flight response, read after it, can
	// overwrite with the older list (a node sets its handlers before it
	// connects).
	Eventually(tb, 30*time.Second, "identify between every pair of peers", func() bool {
		for _, p := range out {
			ps := p.P2P.Host().Peerstore()
			for _, q := range out {
				if q == p {
					continue
				}
				if protos, err := ps.GetProtocols(q.ID); err != nil || len(protos) == 0 {
					return false
				}
			}
		}
		return true
	})
	return out
}

// Run runs fn(ctx) until the test ends, then waits for it to return.
func Run(tb testing.TB, fn func(ctx context.Context) error) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- fn(ctx) }()
	tb.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && ctx.Err() == nil {
			tb.Errorf("run: %v", err)
		}
	})
}

// Eventually waits for cond, polling, until the test's context of d ends.
func Eventually(tb testing.TB, d time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("waited %s for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
