package nodetest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/auction/auctiontest"
	"github.com/idlegrid/idlegrid/node"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/p2p/p2ptest/hostile"
	"github.com/idlegrid/idlegrid/store"
)

// A small market for the attacks of issue 23: a bootstrap peer, three A10
// providers (2 GPUs each, bronze floors $0.50, $0.60, $0.70), one T4
// provider (1 GPU, $0.80) and a renter, on mocknet, each member in a /24
// of its own. Attackers are mocknet peers in networks of their own
// (66.6.<n>.0/24), connected to every member.

// hostileMarket is that market.
type hostileMarket struct {
	c         *Cluster
	renter    *Member
	providers []*Member
	k         int // jobs posted
}

// honestPrice is what the cheapest A10 provider asks: every A10 job (and
// every job naming no model) leases at it.
const honestPrice = 500_000

func newHostileMarket(tb testing.TB, ctx context.Context) *hostileMarket {
	tb.Helper()
	type prov struct {
		profile string
		gpus    int
		bronze  float64
	}
	provs := []prov{{"a10", 2, 0.50}, {"a10", 2, 0.60}, {"a10", 2, 0.70}, {"t4", 1, 0.80}}
	c := New(tb, len(provs)+2, Options{Configure: func(i int, cfg *node.Config) {
		cfg.Market.GoldNeedsBadge = false
		if i == 0 || i > len(provs) {
			return
		}
		p := provs[i-1]
		cfg.GPU.Sim.Profiles = slices.Repeat([]string{p.profile}, p.gpus)
		cfg.Provider.FloorUSD = node.FloorUSD{Gold: 3 * p.bronze, Silver: 2 * p.bronze, Bronze: p.bronze}
	}})
	if err := c.WaitReady(ctx); err != nil {
		tb.Fatal(err)
	}
	m := &hostileMarket{c: c, renter: c.ByRole(node.RoleRenter)[0], providers: c.ByRole(node.RoleProvider)}
	if err := WaitFor(ctx, "every provider backed in the renter's market view", func() bool {
		return m.renter.Node.Trust().MarketView().Backed == len(provs)
	}); err != nil {
		tb.Fatalf("%v: %+v", err, m.renter.Node.Trust().MarketView())
	}
	return m
}

// hostileJob is one job's outcome.
type hostileJob struct {
	name     string
	leased   bool
	leasedAt time.Time // when the wait saw the lease
	price    uint64
	timing   auctionTiming
	reason   string
}

// job posts a one-GPU bronze job (model "" names none) with a 10 s bid
// window (it closes early once every expected bidder answered: a window
// that runs to its end is a renter waiting for bids that never come) and
// waits until it leased and completed, or ended without a lease.
func (m *hostileMarket) job(tb testing.TB, ctx context.Context, model string) hostileJob {
	tb.Helper()
	m.k++
	gpu := ""
	if model != "" {
		gpu = "gpu: [" + model + "]\n"
	}
	name := fmt.Sprintf("hostile-%03d", m.k)
	spec := fmt.Appendf(nil, "name: %s\nmodule: %s\ncommand: [\"sleep:1s\"]\ngpus: 1\n%stier: bronze\nmax_price: 5\nduration: 1s\nbid_window: 10s\n",
		name, DemoModule, gpu)
	r := m.renter.Node
	j, err := r.Renter().Submit(spec)
	if err != nil {
		tb.Fatalf("submit %s: %v", name, err)
	}
	id := j.ID
	out := hostileJob{name: name}
	leased := func(j *store.Job) bool {
		return slices.ContainsFunc(j.Events, func(ev store.JobEvent) bool { return ev.Kind == "lease" })
	}
	if err := WaitFor(ctx, "job "+name+" leased or ended", func() bool {
		j, err = r.Store().GetJob(id)
		return err == nil && (leased(j) || lease.JobState(j.State).Terminal())
	}); err != nil {
		tb.Fatal(err)
	}
	if !leased(j) {
		out.reason = j.State + ": " + j.Reason
		return out
	}
	out.leased, out.leasedAt = true, time.Now()
	if out.timing, _, err = jobTiming(j); err != nil {
		tb.Fatal(err)
	}
	if l, err := r.Store().GetLease(j.Leases[0]); err == nil {
		out.price = l.PriceMicro
	}
	if err := WaitFor(ctx, "job "+name+" done", func() bool {
		j, err = r.Store().GetJob(id)
		return err == nil && lease.JobState(j.State).Terminal()
	}); err != nil {
		tb.Fatal(err)
	}
	return out
}

// attacker is a hostile mocknet peer in network 66.6.n.0/24, connected to
// every member; before it connects it serves what serve names (protocol
// to answer), so identify announces those.
func (m *hostileMarket) attacker(tb testing.TB, ctx context.Context, n int, serve func(a *hostile.Attacker)) *hostile.Attacker {
	tb.Helper()
	h, err := m.c.AddPeer(ma.StringCast(fmt.Sprintf("/ip4/66.6.%d.1/tcp/7401", n)))
	if err != nil {
		tb.Fatal(err)
	}
	a, err := hostile.NewOn(h)
	if err != nil {
		_ = h.Close()
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = a.Close() })
	if serve != nil {
		serve(a)
	}
	for _, mem := range m.c.Members {
		if err := a.Connect(ctx, peer.AddrInfo{ID: mem.Node.ID(), Addrs: []ma.Multiaddr{mem.Addr}}); err != nil {
			tb.Fatal(err)
		}
	}
	return a
}

// sybilDigests signs n digests of fresh keys, each claiming 8 free A10s
// and 8 free GPUs of one of 15 made-up families at $0.001 an hour, valid
// for two hours: what 200 free identities can claim.
func sybilDigests(tb testing.TB, n int, now time.Time) (keys []crypto.PrivKey, raws [][]byte) {
	tb.Helper()
	for range n {
		sk, _, err := crypto.GenerateEd25519Key(nil)
		if err != nil {
			tb.Fatal(err)
		}
		keys = append(keys, sk)
	}
	return sybilDigestsOf(keys, now)
}

// sybilDigestsOf signs a sybil digest for each key.
func sybilDigestsOf(keys []crypto.PrivKey, now time.Time) ([]crypto.PrivKey, [][]byte) {
	var raws [][]byte
	for i, sk := range keys {
		id, _ := peer.IDFromPrivateKey(sk)
		c := &auction.Capacity{
			V: auction.CapacityVersion, Peer: id.String(), Seq: 1, IssuedAtMs: now.UnixMilli(), ExpiresAtMs: now.Add(2 * time.Hour).UnixMilli(),
			Region: auction.Region{Country: "de"}, Runtimes: []string{"wasm"}, Reachability: auction.ReachPublic,
			Host:   auction.Host{CPUCores: 64, RAMMiB: 512 << 10, DiskGiB: 4000},
			Policy: auction.Policy{Tiers: auction.Tiers}, Floor: auction.FloorPrice{Gold: 1_000, Silver: 1_000, Bronze: 1_000},
			Version: "sybil",
		}
		for g := range 16 {
			model := "a10-24gb"
			if g >= 8 {
				model = fmt.Sprintf("zzfake%d-8gb", i%15)
			}
			c.GPUs = append(c.GPUs, auction.GPU{Index: uint32(g), UUID: fmt.Sprintf("GPU-%d-%d", i, g), Model: model,
				Name: "Sybil", VRAMMiB: 24 << 10, ComputeCap: "9.0", Free: true})
		}
		d, err := auction.NewDigest(auction.DigestInput{Capacity: c, Seq: 1, Now: now, TTL: 2 * time.Hour})
		if err != nil {
			panic(err) // the fixture is valid
		}
		raw, err := auction.SealDigest(d, sk)
		if err != nil {
			panic(err)
		}
		raws = append(raws, raw)
	}
	return keys, raws
}

// fakeShards lists the made-up families' shards among shards.
func fakeShards(shards []auction.Shard) []auction.Shard {
	var out []auction.Shard
	for _, s := range shards {
		if strings.HasPrefix(s.Family(), "zzfake") {
			out = append(out, s)
		}
	}
	return out
}

// noModelRFQ is an RFQ like a job naming no model would send.
func noModelRFQ(tb testing.TB, renter peer.ID) *auction.RFQ {
	tb.Helper()
	spec, err := auction.ParseJobSpec(fmt.Appendf(nil, "module: %s\ngpus: 1\ntier: bronze\nmax_price: 5\nduration: 1s\n", DemoModule))
	if err != nil {
		tb.Fatal(err)
	}
	r, err := spec.RFQ(renter, []byte("0123456789abcdef"), time.Now())
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// verdicts reads one member's gossip validation counters of topic, by
// result.
func verdicts(m *Member, topic string) map[string]float64 {
	out := map[string]float64{}
	mfs, err := m.Registry.Gather()
	if err != nil {
		return out
	}
	for _, mf := range mfs {
		if mf.GetName() != "idlegrid_gossip_validation_total" {
			continue
		}
		for _, mt := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range mt.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["topic"] == topic {
				out[labels["result"]] += mt.GetCounter().GetValue()
			}
		}
	}
	return out
}

// signedBy is a record and the key that signed it.
type signedBy struct {
	key crypto.PrivKey
	raw []byte
}

// forgedSummaries makes n award summaries at price signed by a fresh
// renter key alone (the acceptance is of another award: no provider
// accepted this one), and n co-signed by fresh pairs of keys.
func forgedSummaries(tb testing.TB, n int, price uint64) (forged, cosigned []signedBy) {
	tb.Helper()
	lease := auctiontest.Lease{Model: "a10-24gb", Tier: auction.TierBronze, GPUs: 1, PriceMicro: price, At: time.Now()}
	for range n {
		r, _, _ := crypto.GenerateEd25519Key(nil)
		p, _, _ := crypto.GenerateEd25519Key(nil)
		one, err := auctiontest.Summary(r, p, lease)
		if err != nil {
			tb.Fatal(err)
		}
		other, err := auctiontest.Summary(r, p, lease)
		if err != nil {
			tb.Fatal(err)
		}
		s, _, err := auction.OpenAwardSummary(one)
		if err != nil {
			tb.Fatal(err)
		}
		o, _, _ := auction.OpenAwardSummary(other)
		s.AcceptEnv = o.AcceptEnv
		raw, err := auction.SealAwardSummary(s, r)
		if err != nil {
			tb.Fatal(err)
		}
		forged = append(forged, signedBy{r, raw})
		cosigned = append(cosigned, signedBy{r, one})
	}
	return forged, cosigned
}

// storedSummaries are the award summaries n stored.
func storedSummaries(tb testing.TB, n *node.Node) [][]byte {
	tb.Helper()
	raws, err := n.Store().Summaries()
	if err != nil {
		tb.Fatal(err)
	}
	return raws
}
