package nodetest_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-msgio"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node"
	"github.com/idlegrid/idlegrid/node/jobproto"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/node/nodetest"
	"github.com/idlegrid/idlegrid/node/trust"
	"github.com/idlegrid/idlegrid/p2p/p2ptest/hostile"
)

// hostileRFQ is a validly signed RFQ from key, issued at issued: what an
// abuser with its own identity can make. Each k gives a distinct message.
func hostileRFQ(tb testing.TB, key crypto.PrivKey, k int, issued time.Time) []byte {
	tb.Helper()
	id, err := peer.IDFromPrivateKey(key)
	if err != nil {
		tb.Fatal(err)
	}
	spec, err := auction.ParseJobSpec(jobYAML(jobOpts{name: fmt.Sprintf("hostile-%d", k), gpus: 1}))
	if err != nil {
		tb.Fatal(err)
	}
	rfq, err := spec.RFQ(id, fmt.Appendf(nil, "hostile-%08d", k), issued)
	if err != nil {
		tb.Fatal(err)
	}
	raw, err := auction.SealRFQ(rfq, key)
	if err != nil {
		tb.Fatal(err)
	}
	return raw
}

// untimelyRFQs cycles through the validly signed RFQs no honest relay
// forwards: expired an hour ago, and dated ten minutes ahead. They are
// built up front: signing is not the attack.
func untimelyRFQs(tb testing.TB, key crypto.PrivKey, n int) func(i int) []byte {
	tb.Helper()
	now := time.Now()
	msgs := make([][]byte, n)
	for i := range msgs {
		issued := now.Add(-time.Hour)
		if i%2 == 1 {
			issued = now.Add(10 * time.Minute)
		}
		msgs[i] = hostileRFQ(tb, key, i, issued)
	}
	return func(i int) []byte { return msgs[i%n] }
}

// rfqTopics are the RFQ topics m's node listens to, whatever their
// sharding.
func rfqTopics(tb testing.TB, m *nodetest.Member) []string {
	tb.Helper()
	var out []string
	for _, t := range m.Node.P2P().JoinedTopics() {
		if strings.HasPrefix(t, "idlegrid/rfq/") {
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		tb.Fatalf("member %d joined no RFQ topic: %v", m.Index, m.Node.P2P().JoinedTopics())
	}
	return out
}

// attacker connects a fresh hostile identity to target and waits until
// it sees target on topic (when topic is not empty).
func attacker(t *testing.T, ctx context.Context, target *nodetest.Member, topic string) *hostile.Attacker {
	t.Helper()
	a, err := hostile.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	if err := a.Connect(ctx, peer.AddrInfo{ID: target.Node.ID(), Addrs: []ma.Multiaddr{target.Addr}}); err != nil {
		t.Fatal(err)
	}
	if topic != "" {
		if err := a.WaitTopicPeer(ctx, topic, target.Node.ID()); err != nil {
			t.Fatal(err)
		}
	}
	return a
}

// peerEntry is p's row in m's peers view.
func peerEntry(m *nodetest.Member, p peer.ID) (trust.Peer, bool) {
	for _, e := range m.Node.Trust().Peers() {
		if e.ID == p {
			return e, true
		}
	}
	return trust.Peer{}, false
}

// TestHostilePeersPayAndHonestWorkGoesOn: on a small loopback network, a
// hostile peer floods the RFQ topic of both providers with validly signed
// RFQs that no honest relay forwards (long expired, dated ahead) and with
// garbage, while the renter posts work. The honest jobs are leased during
// and after the attack; no hostile message is delivered; the abuser ends
// graylisted or banned, and the providers' peers view says so; the
// providers' per-peer state stays bounded. Then a second hostile peer,
// party to no lease, opens idle and slowloris job-protocol streams and a
// long poll on a real lease: the idle ones are cut at the request
// deadline, long before the protocol's idle limit, and the long poll is
// refused at once.
func TestHostilePeersPayAndHonestWorkGoesOn(t *testing.T) {
	c, renter := auctionCluster(t, []provOpts{{gpus: 2, bronze: 0.5}, {gpus: 2, bronze: 0.6}}, nodetest.Options{Transport: "tcp"})
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	providers := c.ByRole(node.RoleProvider)
	topic := rfqTopics(t, providers[0])[0]

	var leaseID string
	t.Run("rfq abuse", func(t *testing.T) {
		// Two abusers, each on both providers: one sends untimely RFQs,
		// the other garbage.
		untimely, junk := attacker(t, ctx, providers[0], topic), attacker(t, ctx, providers[0], topic)
		for _, a := range []*hostile.Attacker{untimely, junk} {
			if err := a.Connect(ctx, peer.AddrInfo{ID: providers[1].Node.ID(), Addrs: []ma.Multiaddr{providers[1].Addr}}); err != nil {
				t.Fatal(err)
			}
			if err := a.WaitTopicPeer(ctx, topic, providers[1].Node.ID()); err != nil {
				t.Fatal(err)
			}
		}
		everywhere := func(a *hostile.Attacker, cond func(trust.Peer) bool) func() bool {
			return func() bool {
				for _, m := range providers {
					if e, ok := peerEntry(m, a.ID()); !ok || !cond(e) {
						return false
					}
				}
				return true
			}
		}
		banned := func(a *hostile.Attacker) func() bool {
			return everywhere(a, func(e trust.Peer) bool { return e.Banned })
		}
		gen := untimelyRFQs(t, untimely.Host().Peerstore().PrivKey(untimely.ID()), 100)

		j, err := renter.Renter().Submit(jobYAML(jobOpts{name: "during-attack", gpus: 1}))
		if err != nil {
			t.Fatal(err)
		}
		// A few dozen untimely RFQs graylist their sender: each is a
		// reject. Were they only ignored, 40 would cost 40 points, short
		// of the 50 that graylist.
		if _, err := untimely.Spam(ctx, topic, 40, 100, gen, nil); err != nil {
			t.Fatal(err)
		}
		if err := nodetest.WaitFor(ctx, "the untimely RFQs' sender graylisted or banned", everywhere(untimely, func(e trust.Peer) bool {
			return e.Graylisted || e.Banned
		})); err != nil {
			t.Fatal(err)
		}
		// An abuser that keeps going ends banned: its pushes while
		// graylisted are charged too.
		var wg sync.WaitGroup
		var sent [2]int
		var errs [2]error
		wg.Go(func() { sent[0], errs[0] = untimely.Spam(ctx, topic, 100_000, 200, gen, banned(untimely)) })
		wg.Go(func() { sent[1], errs[1] = junk.Spam(ctx, topic, 100_000, 200, hostile.Garbage(512), banned(junk)) })
		during := waitJob(t, ctx, renter, j.ID, lease.JobRunning, lease.JobCompleted)
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("abuser %d: %v after %d messages", i, err, sent[i])
			}
		}
		t.Logf("abusers sent %d more untimely RFQs and %d garbage messages before both providers banned them", sent[0], sent[1])
		leases := jobLeases(t, renter, during)
		if len(leases) == 0 {
			t.Fatal("the job posted during the attack has no lease")
		}
		leaseID = leases[0].ID

		j, err = renter.Renter().Submit(jobYAML(jobOpts{name: "after-attack", gpus: 1}))
		if err != nil {
			t.Fatal(err)
		}
		waitJob(t, ctx, renter, j.ID, lease.JobRunning, lease.JobCompleted)

		for _, m := range providers {
			for _, a := range []*hostile.Attacker{untimely, junk} {
				if e, _ := peerEntry(m, a.ID()); e.Connected || !e.BannedUntil.After(time.Now()) {
					t.Fatalf("member %d's peers view of banned abuser %s: %+v", m.Index, a.ID(), e)
				}
			}
			for _, msg := range m.Node.RecentGossip(topic) {
				if _, author, err := auction.OpenRFQ(msg.Data); err != nil || author == untimely.ID() {
					t.Fatalf("member %d delivered a hostile message (%d bytes, err %v)", m.Index, len(msg.Data), err)
				}
			}
			if tracked := m.Node.P2P().Guard().Tracked(); tracked > len(c.Members)+2 {
				t.Fatalf("member %d tracks %d peers; the network has %d plus two abusers", m.Index, tracked, len(c.Members))
			}
		}
	})
	if leaseID == "" {
		t.FailNow()
	}

	t.Run("job streams from a non-party", func(t *testing.T) {
		target := providers[0]
		for _, m := range providers {
			if l, err := m.Node.Store().GetLease(leaseID); err == nil && l.Side == lease.SideProvider {
				target = m
			}
		}
		a := attacker(t, ctx, target, "")
		idle, refused, err := a.IdleStreams(ctx, target.Node.ID(), lease.JobProto, 4)
		if err != nil {
			t.Fatal(err)
		}
		slow, slowCut, err := a.Slowloris(ctx, target.Node.ID(), lease.JobProto, 1000, 500*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		// The request deadline (lease.JobLimits.HeaderTimeout) cuts them;
		// waiting less than the protocol's idle limit tells it apart.
		wait := lease.JobLimits.Idle - 5*time.Second
		for i, s := range idle {
			if !hostile.StreamCut(s, wait) {
				t.Fatalf("idle job stream %d (of %d, %d refused) not cut within %s", i, len(idle), refused, wait)
			}
		}
		select {
		case <-slow:
		case <-time.After(wait):
			t.Fatalf("slowloris job stream not cut within %s", wait)
		}
		if !slowCut() {
			t.Fatal("the slowloris stream ended without the target cutting it")
		}
		// The target charges a stream when its handler gives up on it,
		// which may come a moment after the attacker saw the stream cut.
		if err := nodetest.WaitFor(ctx, "the idle streams charged", func() bool {
			return target.Node.P2P().Guard().Points(a.ID()) > 0
		}); err != nil {
			t.Fatalf("idle streams cost the abuser nothing: %v", err)
		}

		h := longPoll(t, ctx, a, target.Node.ID(), leaseID, wait)
		if h.Code != jobproto.CodeForbidden {
			t.Fatalf("a non-party's long poll on lease %s answered %+v, want %s", lease.Short(leaseID), h, jobproto.CodeForbidden)
		}
		if total, mine := target.Node.P2P().InboundStreams(lease.JobProto, a.ID()); mine > lease.JobLimits.MaxPerPeer || total > lease.JobLimits.MaxPerPeer+8 {
			t.Fatalf("job streams open: %d from the abuser, %d in all", mine, total)
		}
	})
}

// longPoll sends a status request that asks the server to wait the
// longest allowed on leaseID and returns the header, which must come
// within wait (far less than the requested wait).
func longPoll(t *testing.T, ctx context.Context, a *hostile.Attacker, target peer.ID, leaseID string, wait time.Duration) *jobproto.Header {
	t.Helper()
	if wait >= jobproto.MaxWaitMs*time.Millisecond {
		t.Fatalf("wait %s tells nothing against a %d ms poll", wait, jobproto.MaxWaitMs)
	}
	req, err := jobproto.EncodeRequest(&jobproto.Request{Op: jobproto.OpStatus, Lease: leaseID, WaitMs: jobproto.MaxWaitMs})
	if err != nil {
		t.Fatal(err)
	}
	s, err := a.Write(ctx, target, lease.JobProto, append(binary.AppendUvarint(nil, uint64(len(req))), req...))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Reset() }()
	return readHeader(t, s, wait)
}

func readHeader(t *testing.T, s network.Stream, wait time.Duration) *jobproto.Header {
	t.Helper()
	_ = s.SetReadDeadline(time.Now().Add(wait))
	r := msgio.NewVarintReaderSize(s, jobproto.MaxFrameBytes)
	for {
		b, err := r.ReadMsg()
		if err != nil {
			t.Fatalf("read header within %s: %v", wait, err)
		}
		if len(b) == 0 {
			continue // keepalive
		}
		h, err := jobproto.DecodeHeader(b)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
}
