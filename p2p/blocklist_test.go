package p2p

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// TestBlockClosesAndRefuses: on real TCP hosts, Block closes the peer's
// connections and the gater refuses new ones in both directions.
func TestBlockClosesAndRefuses(t *testing.T) {
	mk := func() *Node {
		cfg := hostConfig(t, "/ip4/127.0.0.1/tcp/0")
		cfg.DHTServer = true
		n, err := New(cfg, Deps{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = n.Close() })
		return n
	}
	a, b := mk(), mk()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	bInfo := peer.AddrInfo{ID: b.ID(), Addrs: b.ListenAddrs()}
	aInfo := peer.AddrInfo{ID: a.ID(), Addrs: a.ListenAddrs()}
	if err := a.Host().Connect(ctx, bInfo); err != nil {
		t.Fatal(err)
	}
	a.Block(b.ID())
	if !a.Blocked(b.ID()) || a.Blocked(a.ID()) {
		t.Fatal("Blocked does not report the block")
	}
	waitFor(t, "connection closed", 10*time.Second, func() bool { return len(a.Host().Network().ConnsToPeer(b.ID())) == 0 })
	a.Host().Peerstore().AddAddrs(b.ID(), b.ListenAddrs(), time.Hour)
	if err := a.Host().Connect(ctx, bInfo); err == nil {
		t.Fatal("dialing a blocked peer must fail")
	}
	// The blocked peer dialling in is refused after the handshake.
	if err := b.Host().Connect(ctx, aInfo); err == nil {
		waitFor(t, "inbound connection refused", 10*time.Second, func() bool {
			return len(a.Host().Network().ConnsToPeer(b.ID())) == 0
		})
	}
	a.Block(a.ID()) // blocking oneself is ignored
	if a.Blocked(a.ID()) {
		t.Fatal("a node must not block itself")
	}
}

// TestStrangersHaveTheirOwnBound: stranger entries (AddStranger) refuse
// their peer until their time, and past maxStrangers make room among
// themselves only: a flood of them never pushes out a ban or a block.
func TestStrangersHaveTheirOwnBound(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	b := NewBlocklist()
	b.now = func() time.Time { return now }
	id := func(i int) peer.ID { return peer.ID(fmt.Sprintf("peer-%06d", i)) }
	banned, blocked := peer.ID("banned"), peer.ID("blocked")
	b.Ban(banned, now.Add(time.Hour))
	b.Add(blocked)
	for i := range maxStrangers + 10 {
		if !b.AddStranger(id(i), now.Add(30*24*time.Hour+time.Duration(i)*time.Second)) {
			t.Fatalf("stranger %d was refused before", i)
		}
	}
	if !b.Has(banned) || !b.Has(blocked) {
		t.Fatal("a flood of strangers pushed out a ban or a block")
	}
	if len(b.strangers) != maxStrangers {
		t.Fatalf("%d stranger entries held, want %d", len(b.strangers), maxStrangers)
	}
	if b.Has(id(0)) || !b.Has(id(maxStrangers+9)) {
		t.Error("past the bound the stranger ending first did not make room")
	}
	if rs := b.Strangers(); len(rs) != maxStrangers || rs[0].Peer != id(10) || !rs[0].Until.Equal(now.Add(30*24*time.Hour+10*time.Second)) {
		t.Errorf("the strangers listed: %d, first %+v", len(rs), rs[0])
	}
	now = now.Add(31 * 24 * time.Hour)
	if b.Has(id(maxStrangers + 9)) {
		t.Error("a stranger entry outlived its time")
	}
	if rs := b.Strangers(); len(rs) != 0 {
		t.Errorf("%d strangers listed after their time", len(rs))
	}
}

// TestUnblockEndsOnlyABlock: Unblock ends a block for good, and leaves a
// ban and a stranger's refusal in force.
func TestUnblockEndsOnlyABlock(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	b := NewBlocklist()
	b.now = func() time.Time { return now }
	blocked, banned, stranger := peer.ID("blocked"), peer.ID("banned"), peer.ID("stranger")
	b.Add(blocked)
	b.Ban(banned, now.Add(time.Hour))
	b.AddStranger(stranger, now.Add(time.Hour))
	if !b.Unblock(blocked) || b.Has(blocked) {
		t.Error("a block for good did not end")
	}
	if b.Unblock(blocked) {
		t.Error("a second Unblock reported a block")
	}
	for _, p := range []peer.ID{banned, stranger} {
		if b.Unblock(p) || !b.Has(p) {
			t.Errorf("Unblock ended %s's refusal", p)
		}
	}
}
