package memnet_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/idlegrid/idlegrid/p2p/p2ptest/memnet"
)

func newHost(t *testing.T, n *memnet.Network, addr string) host.Host {
	t.Helper()
	opts := append(n.HostOptions(), libp2p.ListenAddrStrings(addr), libp2p.DisableMetrics())
	h, err := libp2p.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h
}

// TestHostsConnectAndStream: two libp2p hosts on one memnet connect,
// each sees the other's listen IP, and a stream carries bytes both ways.
func TestHostsConnectAndStream(t *testing.T) {
	n := memnet.New()
	a := newHost(t, n, "/ip4/10.0.1.1/tcp/7401")
	b := newHost(t, n, "/ip4/10.0.2.1/tcp/7401")
	b.SetStreamHandler("/echo", func(s network.Stream) {
		defer s.Close()
		_, _ = io.Copy(s, s)
	})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := a.Connect(ctx, peer.AddrInfo{ID: b.ID(), Addrs: b.Addrs()}); err != nil {
		t.Fatalf("connect: %v", err)
	}
	conns := b.Network().ConnsToPeer(a.ID())
	if len(conns) != 1 {
		t.Fatalf("b holds %d connections to a, want 1", len(conns))
	}
	if ip, _ := ma.SplitFirst(conns[0].RemoteMultiaddr()); ip == nil || ip.Value() != "10.0.1.1" {
		t.Fatalf("b sees a at %s, want a's listen IP 10.0.1.1", conns[0].RemoteMultiaddr())
	}
	if conns[0].Stat().Direction != network.DirInbound {
		t.Fatalf("b's connection is %s, want inbound", conns[0].Stat().Direction)
	}
	s, err := a.NewStream(ctx, b.ID(), "/echo")
	if err != nil {
		t.Fatalf("stream: %v", err)
	}
	if _, err := s.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	_ = s.CloseWrite()
	got, err := io.ReadAll(s)
	if err != nil || string(got) != "hello" {
		t.Fatalf("echo = %q, %v; want hello", got, err)
	}
}

// TestDialNobodyIsRefused: a dial to an address nobody listens on, or
// that a closed host listened on, fails at once.
func TestDialNobodyIsRefused(t *testing.T) {
	n := memnet.New()
	a := newHost(t, n, "/ip4/10.0.1.1/tcp/7401")
	b := newHost(t, n, "/ip4/10.0.2.1/tcp/7401")
	bInfo := peer.AddrInfo{ID: b.ID(), Addrs: b.Addrs()}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	err := a.Connect(ctx, bInfo)
	if !errors.Is(err, memnet.ErrRefused) {
		t.Fatalf("dial to a closed host: %v, want %v", err, memnet.ErrRefused)
	}
	// The address is free again: a new host can take it.
	c := newHost(t, n, "/ip4/10.0.2.1/tcp/7401")
	if err := a.Connect(ctx, peer.AddrInfo{ID: c.ID(), Addrs: c.Addrs()}); err != nil {
		t.Fatalf("connect to the address's new host: %v", err)
	}
}

// TestListenNeedsAPortOfItsOwn: two hosts cannot share an address, and
// port 0 is refused rather than silently picked.
func TestListenNeedsAPortOfItsOwn(t *testing.T) {
	n := memnet.New()
	newHost(t, n, "/ip4/10.0.1.1/tcp/7401")
	for _, addr := range []string{"/ip4/10.0.1.1/tcp/7401", "/ip4/10.0.3.1/tcp/0"} {
		opts := append(n.HostOptions(), libp2p.ListenAddrStrings(addr), libp2p.DisableMetrics())
		if h, err := libp2p.New(opts...); err == nil {
			_ = h.Close()
			t.Errorf("listen %s: no error", addr)
		}
	}
}
