package p2p

import (
	"context"
	"errors"
	"maps"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/discovery"
	"github.com/libp2p/go-libp2p/core/peer"
)

// countingDiscovery counts calls and how many advertisements overlap.
type countingDiscovery struct {
	mu         sync.Mutex
	advertised map[string]int
	found      map[string]int
	limits     []int
	inflight   atomic.Int32
	overlap    atomic.Int32
	fail       bool
}

func (c *countingDiscovery) Advertise(_ context.Context, ns string, _ ...discovery.Option) (time.Duration, error) {
	if n := c.inflight.Add(1); n > c.overlap.Load() {
		c.overlap.Store(n)
	}
	defer c.inflight.Add(-1)
	time.Sleep(5 * time.Millisecond)
	c.mu.Lock()
	c.advertised[ns]++
	c.mu.Unlock()
	if c.fail {
		return 0, errors.New("no peers in table")
	}
	return 3 * time.Hour, nil
}

func (c *countingDiscovery) FindPeers(_ context.Context, ns string, opts ...discovery.Option) (<-chan peer.AddrInfo, error) {
	var o discovery.Options
	if err := o.Apply(opts...); err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.found[ns]++
	c.limits = append(c.limits, o.Limit)
	c.mu.Unlock()
	ch := make(chan peer.AddrInfo)
	close(ch)
	return ch, nil
}

func TestTopicDiscoveryKeepsTheDHTQuiet(t *testing.T) {
	inner := &countingDiscovery{advertised: map[string]int{}, found: map[string]int{}}
	d := newTopicDiscovery(inner, func(topic string) bool { return topic == TopicAttest }, nil)
	ctx := t.Context()

	// Static topics: no DHT traffic at all.
	if ttl, err := d.Advertise(ctx, "floodsub:"+TopicAttest); err != nil || ttl != advertiseEvery {
		t.Fatalf("static topic: ttl %s, err %v", ttl, err)
	}
	for range 3 {
		if _, err := d.FindPeers(ctx, "floodsub:"+TopicAttest); err != nil {
			t.Fatal(err)
		}
	}
	// Other topics: advertised one at a time, re-advertised within the
	// DHT's record lifetime.
	var wg sync.WaitGroup
	for _, topic := range []string{"a", "b", "c", "d"} {
		wg.Go(func() {
			if ttl, err := d.Advertise(ctx, "floodsub:"+topic); err != nil || ttl != advertiseEvery {
				t.Errorf("topic %s: ttl %s, err %v", topic, ttl, err)
			}
		})
	}
	wg.Wait()
	if inner.overlap.Load() != 1 {
		t.Errorf("%d advertisements ran at once, want 1", inner.overlap.Load())
	}
	// Looked up at most once per findGap.
	for range 5 {
		if _, err := d.FindPeers(ctx, "floodsub:a"); err != nil {
			t.Fatal(err)
		}
	}
	inner.mu.Lock()
	if inner.advertised["floodsub:"+TopicAttest] != 0 || inner.found["floodsub:"+TopicAttest] != 0 {
		t.Errorf("a static topic reached the DHT: %v advertised, %v looked up", inner.advertised, inner.found)
	}
	if inner.found["floodsub:a"] != 1 {
		t.Errorf("topic a looked up %d times in a burst, want 1", inner.found["floodsub:a"])
	}
	for _, l := range inner.limits {
		if l <= 0 || l > findLimit {
			t.Errorf("a lookup asked for %d peers, want at most %d", l, findLimit)
		}
	}
	inner.mu.Unlock()

	// A failed advertisement is retried later and later, up to a bound.
	inner.fail = true
	var last time.Duration
	for i := range 8 {
		ttl, err := d.Advertise(ctx, "floodsub:a")
		if err == nil || ttl < last || ttl > advertiseMax {
			t.Fatalf("failure %d: retry after %s (before: %s), err %v", i+1, ttl, last, err)
		}
		last = ttl
	}
	if last != advertiseMax {
		t.Fatalf("retries end at %s, want %s", last, advertiseMax)
	}
}

// TestTopicsWithOneRendezvousShareItsKey: three topics with the same
// subscribers are announced under one key and looked up under it, once
// per findGap for all three; a topic that announces nothing reaches the
// DHT only through lookups.
func TestTopicsWithOneRendezvousShareItsKey(t *testing.T) {
	inner := &countingDiscovery{advertised: map[string]int{}, found: map[string]int{}}
	rendezvous := func(topic string) (string, string) {
		switch topic {
		case "shard/rfq":
			return "shard/rfq", "shard/rfq"
		case "shard/digest", "shard/attest":
			return "shard/rfq", ""
		}
		return topic, topic
	}
	d := newTopicDiscovery(inner, func(string) bool { return false }, rendezvous)
	ctx := t.Context()
	for _, topic := range []string{"shard/rfq", "shard/digest", "shard/attest", "other"} {
		if _, err := d.Advertise(ctx, rendezvousPrefix+topic); err != nil {
			t.Fatal(err)
		}
		if _, err := d.FindPeers(ctx, rendezvousPrefix+topic); err != nil {
			t.Fatal(err)
		}
	}
	inner.mu.Lock()
	defer inner.mu.Unlock()
	wantAdvertised := map[string]int{rendezvousPrefix + "shard/rfq": 1, rendezvousPrefix + "other": 1}
	wantFound := map[string]int{rendezvousPrefix + "shard/rfq": 1, rendezvousPrefix + "other": 1}
	if !maps.Equal(inner.advertised, wantAdvertised) {
		t.Errorf("advertised %v, want %v", inner.advertised, wantAdvertised)
	}
	if !maps.Equal(inner.found, wantFound) {
		t.Errorf("looked up %v, want %v", inner.found, wantFound)
	}
}

// TestPublisherLooksUpTheAnnouncedKey: a publisher outside the mesh looks
// a topic's subscribers up under the key gossipsub's discovery announces
// ("floodsub:" + topic), through the same rate limit; it once asked for
// the bare topic name, a key nobody announces.
func TestPublisherLooksUpTheAnnouncedKey(t *testing.T) {
	inner := &countingDiscovery{advertised: map[string]int{}, found: map[string]int{}}
	n := &Node{topicDisc: newTopicDiscovery(inner, func(string) bool { return false }, nil)}
	for range 3 {
		n.connectTopicPeers(t.Context(), "t", 1)
	}
	inner.mu.Lock()
	defer inner.mu.Unlock()
	if want := map[string]int{rendezvousPrefix + "t": 1}; !maps.Equal(inner.found, want) {
		t.Errorf("looked up %v, want %v", inner.found, want)
	}
}
