package p2p

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/pprof"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/p2p/p2ptest/memnet"
)

// TestNodesCloseTogether: nodes that all know each other close at once,
// as a cluster or a data centre restarting does, and every one stops.
// Each closing node's topics and DHT go, so it pushes identify to every
// peer while the peers close too: the traffic that hung 6 or 7 of 150
// nodes closing on two cores (Node.Close says how). At this size and
// with idle cores the race does not show; the 150-node benchmark is its
// check (docs/benchmarks.md, issue 26). A hang here fails with a
// goroutine dump.
func TestNodesCloseTogether(t *testing.T) {
	const n = 24
	mem := memnet.New()
	nodes := make([]*Node, n)
	var boot peer.AddrInfo
	for i := range n {
		cfg := hostConfig(t, fmt.Sprintf("/ip4/10.9.%d.1/tcp/7401", i+1))
		cfg.DHTServer = true
		cfg.GossipHeartbeat = 100 * time.Millisecond
		if i == 0 {
			cfg.Bootstrapper = true
		} else {
			cfg.Bootstrap = []peer.AddrInfo{boot}
		}
		node, err := New(cfg, Deps{Transports: mem.HostOptions(), PeerBook: newMemBook()})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			boot = peer.AddrInfo{ID: node.ID(), Addrs: node.host.Addrs()}
		}
		nodes[i] = node
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, node := range nodes {
		wg.Go(func() { _ = node.Run(ctx) })
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			cancel()
			wg.Wait()
			for _, node := range nodes {
				_ = node.Close()
			}
		}
	})
	// Every node connects to every other and identifies it.
	cctx, ccancel := context.WithTimeout(ctx, 2*time.Minute)
	defer ccancel()
	for i, a := range nodes {
		for _, b := range nodes[i+1:] {
			if err := a.host.Connect(cctx, peer.AddrInfo{ID: b.ID(), Addrs: b.host.Addrs()}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, a := range nodes {
		for _, b := range nodes {
			for a != b && !identified(a.host.Peerstore(), b.ID()) {
				select {
				case <-cctx.Done():
					t.Fatalf("%s never identified %s", a.ID(), b.ID())
				case <-time.After(20 * time.Millisecond):
				}
			}
		}
	}
	cancel()
	wg.Wait()
	stopped = true
	done := make(chan struct{})
	go func() {
		var cw sync.WaitGroup
		for _, node := range nodes {
			cw.Go(func() { _ = node.Close() })
		}
		cw.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		f, err := os.CreateTemp("", "p2p-close-stuck-*.txt")
		if err == nil {
			_ = pprof.Lookup("goroutine").WriteTo(f, 1)
			_ = f.Close()
		}
		t.Fatalf("%d nodes closing together did not all stop within a minute; goroutines in %s", n, f.Name())
	}
}

// stallingHost is a host whose Close blocks until release, as libp2p's
// can when its event bus stalls.
type stallingHost struct {
	host.Host
	release chan struct{}
	closed  chan struct{}
}

func (h *stallingHost) Close() error {
	<-h.release
	defer close(h.closed)
	return h.Host.Close()
}

// TestCloseDoesNotWaitForAStalledHost: when libp2p's host never finishes
// closing, the node's Close still returns, after its bound, saying so,
// so the node goes on to close its store.
func TestCloseDoesNotWaitForAStalledHost(t *testing.T) {
	mem := memnet.New()
	node, err := New(hostConfig(t, "/ip4/10.9.200.1/tcp/7401"), Deps{Transports: mem.HostOptions(), PeerBook: newMemBook()})
	if err != nil {
		t.Fatal(err)
	}
	stall := &stallingHost{Host: node.host, release: make(chan struct{}), closed: make(chan struct{})}
	node.host = stall
	node.hostCloseWait = 100 * time.Millisecond
	done := make(chan error, 1)
	go func() { done <- node.Close() }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrHostCloseStalled) {
			t.Fatalf("Close: %v, want %v", err, ErrHostCloseStalled)
		}
	case <-time.After(time.Minute):
		t.Fatal("Close waited for the stalled host")
	}
	close(stall.release) // the host closes after all: nothing is left running
	<-stall.closed
}
