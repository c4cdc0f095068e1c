package nodetest

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node"
	"github.com/idlegrid/idlegrid/p2p"
)

// probeSpec is the job behind gossip probes on the unsharded RFQ topic:
// a real, signed RFQ of the usual size that passes every node's RFQ
// validator but that no benchmark provider bids on (they have A10s, it
// asks for a T4). Its 60 s bid window keeps it from expiring (and being
// dropped by validators) on a slow network before every provider has it.
var probeSpec = mustProbeSpec("gpu: [t4]\n")

// shardProbeSpec is the job behind gossip probes on the A10 shard's RFQ
// topic: an A10 job, so the shard validators pass it, in a docker image,
// which the benchmark providers (wasm only) cannot run.
var shardProbeSpec = mustProbeSpec("gpu: [a10]\nimage: ghcr.io/idlegrid/bench-probe:1@sha256:" + strings.Repeat("ab", 32) + "\n")

func mustProbeSpec(what string) *auction.JobSpec {
	module := auction.CapabilityCID("idlegrid-bench-probe").String()
	body := "name: gossip-probe\ngpus: 1\n" + what + "tier: bronze\nmax_price: 5\nduration: 1h\nbid_window: 60s\n"
	if !strings.Contains(what, "image:") {
		body += "module: " + module + "\n"
	}
	s, err := auction.ParseJobSpec([]byte(body))
	if err != nil {
		panic(err)
	}
	if err := s.Validate(); err != nil {
		panic(err)
	}
	return s
}

// prober publishes gossip probes on an RFQ topic and records their
// delivery at every provider.
type prober struct {
	topic     string
	spec      *auction.JobSpec
	rec       *recorder
	renter    *Member
	providers []*Member
	rng       *rand.Rand
	seq       uint64
	size      int // bytes of the last probe
}

// newProber subscribes every provider to an RFQ topic (a second
// subscription beside the node's own, if it has one); probes are RFQs for
// spec. other, if set, sees every RFQ that is not a probe, with its
// arrival time, at provider i.
func newProber(b *testing.B, ctx context.Context, c *Cluster, seed uint64, topic string, spec *auction.JobSpec, other func(i int, data []byte, at time.Time)) *prober {
	b.Helper()
	providers := c.ByRole(node.RoleProvider)
	pr := &prober{
		topic:     topic,
		spec:      spec,
		rec:       newRecorder(providers),
		renter:    c.ByRole(node.RoleRenter)[0],
		providers: providers,
		rng:       rand.New(rand.NewPCG(seed, 2)),
	}
	// Each Subscribe waits on that node's pubsub event loop, which on
	// saturated cores can take seconds: one after another, 200 providers
	// took minutes, which formation then measured. All at once, it is the
	// slowest node's wait.
	errs := make([]error, len(providers))
	took := make([]time.Duration, len(providers))
	var wg sync.WaitGroup
	for i, m := range providers {
		self := m.Node.ID()
		wg.Go(func() {
			t0 := time.Now()
			defer func() { took[i] = time.Since(t0) }()
			errs[i] = m.Node.P2P().Subscribe(ctx, topic, func(msg p2p.Message) {
				now := time.Now()
				// Our own publications come back through our subscription with
				// zero latency; they are not deliveries.
				if msg.ReceivedFrom == self {
					return
				}
				if !pr.rec.add(i, msg.Data, now) && other != nil {
					other(i, msg.Data, now)
				}
			})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		b.Fatal(err)
	}
	slowest := slices.Index(took, slices.Max(took))
	slices.Sort(took)
	progress("subscribing the probes took %s at the median, %s at p90, %s at most (provider %d)",
		took[len(took)/2].Round(time.Millisecond), took[len(took)*9/10].Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond), providers[slowest].Index)
	return pr
}

// fewTopicPeers reports whether some provider knows fewer than want
// subscribers of the probes' topic among its peers. The providers are
// asked at once, for the same reason they subscribe at once.
func (pr *prober) fewTopicPeers(want int) bool {
	var short atomic.Bool
	var wg sync.WaitGroup
	for _, m := range pr.providers {
		wg.Go(func() {
			if len(m.Node.P2P().ListTopicPeers(pr.topic)) < want {
				short.Store(true)
			}
		})
	}
	wg.Wait()
	return short.Load()
}

// publish sends one probe. Formation probes (kindProbe) alternate between
// the renter and a provider, so that formation means both the renter's
// flood publish and mesh forwarding from inside the mesh reach everyone.
// Measured probes (kindMeasure) come from a provider chosen at random:
// every node holds each renter key to an RFQ rate (5/s once it is
// renowned, node/trust/rfq_rate.go), and the renter's real RFQs plus two
// probes per job went over it, so providers ignored the excess and the
// run failed on probes lost by design. The renter's own publish is
// measured by its real RFQs (rfq_gossip_p95_ms).
func (pr *prober) publish(ctx context.Context, kind byte) (uint64, error) {
	pr.seq++
	pub := -1 // the renter
	if kind == kindMeasure || pr.seq%2 == 0 {
		pub = pr.rng.IntN(len(pr.providers))
	}
	from := pr.renter
	if pub >= 0 {
		from = pr.providers[pub]
	}
	nonce := make([]byte, auction.NonceLen)
	binary.BigEndian.PutUint64(nonce, pr.seq)
	binary.BigEndian.PutUint64(nonce[8:], pr.rng.Uint64())
	rfq, err := pr.spec.RFQ(from.Node.ID(), nonce, time.Now())
	if err != nil {
		return 0, err
	}
	rfq.Addrs = from.Node.P2PAddrs()[:min(len(from.Node.P2PAddrs()), auction.MaxRFQAddrs)]
	data, err := auction.SealRFQ(rfq, from.Key)
	if err != nil {
		return 0, err
	}
	pr.size = len(data)
	// The clock starts here, after building and signing, just before
	// Publish.
	pr.rec.expect(pr.seq, kind, pub, data, time.Now())
	pctx, pcancel := context.WithTimeout(ctx, 10*time.Second)
	defer pcancel()
	return pr.seq, from.Node.P2P().Publish(pctx, pr.topic, data, 0)
}

// drop stops counting message seq: its publish failed, and whether it went
// out is not known.
func (r *recorder) drop(seq uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.want[seq] = 0
	delete(r.measured, seq)
}

// waitMesh waits until the probes' topic mesh is usable: every provider knows
// enough rfq subscribers among its peers for the next heartbeat to fill
// its mesh to Dlo, and then a renter probe and a provider probe have each
// reached every provider. Probes repeat until then; their deliveries are
// not measured.
func (pr *prober) waitMesh(b *testing.B, ctx context.Context) {
	b.Helper()
	const dlo = 5 // gossipsub's default; p2p keeps it
	if err := WaitFor(ctx, "rfq topic peers", func() bool {
		if len(pr.renter.Node.P2P().ListTopicPeers(pr.topic)) == 0 {
			return false
		}
		return !pr.fewTopicPeers(min(dlo, len(pr.providers)-1))
	}); err != nil {
		b.Fatal(err)
	}
	progress("rfq topic peers known to every provider; probing")
	// A -v run learns what formation waits for: how far the probes got in
	// their 2 s, and how far the pair probed 20 s before got in the end.
	var tries int
	var lastReport time.Time
	var before []uint64
	for {
		s1, err1 := pr.publish(ctx, kindProbe)
		s2, err2 := pr.publish(ctx, kindProbe)
		if err := errors.Join(err1, err2); err != nil {
			// A publish waits on the publisher's event loop, which a
			// network still forming can keep past publish's deadline:
			// that is not formed yet, not a failure.
			if ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
				b.Fatalf("probe publish: %v", err)
			}
			continue
		}
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		err := WaitFor(pctx, "probe delivery", func() bool { return pr.rec.complete(s1) && pr.rec.complete(s2) })
		pcancel()
		if err == nil {
			return
		}
		tries++
		if time.Since(lastReport) >= 20*time.Second {
			progress("probe pairs tried %d; the last reached %s of %d providers in 2 s; the pair of the last report has reached %s",
				tries, pr.rec.reached(s1, s2), len(pr.providers), pr.rec.reached(before...))
			lastReport, before = time.Now(), []uint64{s1, s2}
		}
		if ctx.Err() != nil {
			b.Fatalf("rfq mesh never carried a probe to every provider: %v", ctx.Err())
		}
	}
}

// waitDelivered waits until every probe in sent reached every provider,
// or fails after deliveryDeadline.
func (pr *prober) waitDelivered(ctx context.Context, sent []uint64) error {
	dctx, dcancel := context.WithTimeout(ctx, deliveryDeadline)
	defer dcancel()
	err := WaitFor(dctx, "delivery to every provider", func() bool {
		return !slices.ContainsFunc(sent, func(s uint64) bool { return !pr.rec.complete(s) })
	})
	if err != nil {
		return fmt.Errorf("%v after %s: %s", err, deliveryDeadline, pr.rec.missing(sent))
	}
	return nil
}

// recorder collects deliveries at the subscribing providers.
type recorder struct {
	mu       sync.Mutex
	ids      []peer.ID           // subscriber index -> peer
	want     map[uint64]int      // seq -> expected deliveries
	got      map[uint64][]bool   // seq -> subscriber -> delivered
	count    map[uint64]int      // seq -> distinct deliveries
	measured map[uint64]bool     // seq -> counts towards the results
	bySum    map[[32]byte]uint64 // SHA-256 of the payload -> seq
	sent     map[uint64]time.Time
	lat      []time.Duration // latencies of measured deliveries
}

func newRecorder(subs []*Member) *recorder {
	r := &recorder{
		want:     map[uint64]int{},
		got:      map[uint64][]bool{},
		count:    map[uint64]int{},
		measured: map[uint64]bool{},
		bySum:    map[[32]byte]uint64{},
		sent:     map[uint64]time.Time{},
	}
	for _, m := range subs {
		r.ids = append(r.ids, m.Node.ID())
	}
	return r
}

// expect registers a message before it is published at sent; pub is the
// publishing subscriber's index, or -1 when the publisher does not
// subscribe (the renter). Deliveries are recognised by the payload's hash,
// which costs far less per delivery than opening the signed RFQ.
func (r *recorder) expect(seq uint64, kind byte, pub int, data []byte, sent time.Time) {
	sum := sha256.Sum256(data)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bySum[sum] = seq
	r.sent[seq] = sent
	r.got[seq] = make([]bool, len(r.ids))
	r.want[seq] = len(r.ids)
	r.measured[seq] = kind == kindMeasure
	if pub >= 0 {
		r.got[seq][pub] = true // it has its own message
		r.want[seq]--
	}
}

// add records a delivery at subscriber sub and reports whether data is a
// probe at all.
func (r *recorder) add(sub int, data []byte, now time.Time) bool {
	sum := sha256.Sum256(data)
	r.mu.Lock()
	defer r.mu.Unlock()
	seq, ok := r.bySum[sum]
	if !ok {
		return false
	}
	sent := r.sent[seq]
	got := r.got[seq]
	if got[sub] {
		// Content IDs deduplicate, so a second delivery would be a bug;
		// the cluster test checks for it, here it only must not count.
		return true
	}
	got[sub] = true
	r.count[seq]++
	if r.measured[seq] {
		r.lat = append(r.lat, now.Sub(sent))
	}
	return true
}

func (r *recorder) complete(seq uint64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.count[seq] >= r.want[seq]
}

// reached lists how many providers each message reached so far.
func (r *recorder) reached(seqs ...uint64) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, len(seqs))
	for i, s := range seqs {
		out[i] = fmt.Sprintf("%d/%d", r.count[s], r.want[s])
	}
	return "[" + strings.Join(out, " ") + "]"
}

// missing describes undelivered messages for the failure report.
func (r *recorder) missing(seqs []uint64) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	lost, msgs := 0, 0
	var example string
	for _, s := range seqs {
		if miss := r.want[s] - r.count[s]; miss > 0 {
			lost += miss
			msgs++
			if example == "" {
				i := slices.Index(r.got[s], false)
				example = fmt.Sprintf("; e.g. message %d never reached provider %s", s, r.ids[i])
			}
		}
	}
	return fmt.Sprintf("%d of %d messages incomplete, %d deliveries missing%s", msgs, len(seqs), lost, example)
}

// result returns the measured latencies, sorted, and the delivery ratio
// over measured messages.
func (r *recorder) result() ([]time.Duration, float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	want, got := 0, 0
	for s, m := range r.measured {
		if m {
			want += r.want[s]
			got += r.count[s]
		}
	}
	lat := slices.Clone(r.lat)
	slices.Sort(lat)
	if want == 0 {
		return lat, 0
	}
	return lat, float64(got) / float64(want)
}
