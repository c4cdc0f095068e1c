package p2p

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/discovery"
	"github.com/libp2p/go-libp2p/core/peer"
)

// topicDiscovery is how gossipsub finds a topic's subscribers: provider
// records under "floodsub:<topic>" in the DHT. Left to itself gossipsub
// advertises every topic it joins at once, retries a failed advertisement
// on a fixed timer, and looks a topic's providers up every second while
// its mesh is below Dlo. At start every node does all of that for every
// topic together: at 200 nodes a thousand DHT lookups at once, each
// dialing dozens of peers, and the connection managers trimming what
// they opened, a storm the network did not form through. So:
//
//   - the static topics every node joins (attest, fraud) are neither
//     advertised nor looked up: any connection is a subscriber, and a
//     record key that every node provides is a hot spot and nothing
//     more;
//   - a node runs one advertisement at a time, a failed one again after a
//     backoff, and re-advertises well within the hour DHT nodes keep
//     provider records;
//   - topics whose subscribers are the same nodes share one key
//     (Config.TopicRendezvous): one announcement and one lookup serve them
//     all;
//   - a key is looked up at most once per findGap, for at most findLimit
//     peers: gossipsub dials every peer a lookup returns, at once (the
//     DHT's default is 100), while a mesh needs a handful.
type topicDiscovery struct {
	discovery.Discovery
	static     func(topic string) bool
	rendezvous func(topic string) (find, announce string)
	// advertising admits one advertisement at a time.
	advertising chan struct{}

	mu       sync.Mutex
	failures map[string]int // advertisements failed in a row
	found    map[string]time.Time
}

// Discovery timing.
const (
	advertiseRetry = 5 * time.Second
	advertiseMax   = 2 * time.Minute
	advertiseEvery = 20 * time.Minute
	findGap        = 10 * time.Second
	findLimit      = 12
)

// newTopicDiscovery wraps d; rendezvous may be nil (every topic is its
// own key).
func newTopicDiscovery(d discovery.Discovery, static func(topic string) bool, rendezvous func(topic string) (find, announce string)) *topicDiscovery {
	if rendezvous == nil {
		rendezvous = func(topic string) (string, string) { return topic, topic }
	}
	return &topicDiscovery{Discovery: d, static: static, rendezvous: rendezvous, advertising: make(chan struct{}, 1),
		failures: map[string]int{}, found: map[string]time.Time{}}
}

// gossipsub's rendezvous prefix: the DHT key of a topic is the CID of
// "floodsub:<topic>", in every release.
const rendezvousPrefix = "floodsub:"

// topicOf strips gossipsub's rendezvous prefix.
func topicOf(ns string) string { return strings.TrimPrefix(ns, rendezvousPrefix) }

func (d *topicDiscovery) Advertise(ctx context.Context, ns string, opts ...discovery.Option) (time.Duration, error) {
	topic := topicOf(ns)
	if d.static(topic) {
		return advertiseEvery, nil
	}
	if _, announce := d.rendezvous(topic); announce != topic {
		// Another topic's key stands for this one (announced when that
		// topic is joined), or nothing does: this node need not be found
		// through this topic.
		return advertiseEvery, nil
	}
	select {
	case d.advertising <- struct{}{}:
	case <-ctx.Done():
		return advertiseRetry, ctx.Err()
	}
	ttl, err := d.Discovery.Advertise(ctx, ns, opts...)
	<-d.advertising
	d.mu.Lock()
	defer d.mu.Unlock()
	if err != nil {
		d.failures[topic]++
		return min(advertiseRetry<<min(d.failures[topic]-1, 5), advertiseMax), err
	}
	delete(d.failures, topic)
	return min(ttl, advertiseEvery), nil
}

func (d *topicDiscovery) FindPeers(ctx context.Context, ns string, opts ...discovery.Option) (<-chan peer.AddrInfo, error) {
	topic := topicOf(ns)
	find, _ := d.rendezvous(topic)
	now := time.Now()
	d.mu.Lock()
	due := !d.static(topic) && find != "" && now.Sub(d.found[find]) >= findGap
	if due {
		d.found[find] = now
	}
	d.mu.Unlock()
	if !due {
		none := make(chan peer.AddrInfo)
		close(none)
		return none, nil
	}
	return d.Discovery.FindPeers(ctx, rendezvousPrefix+find, append(opts, discovery.Limit(findLimit))...)
}
