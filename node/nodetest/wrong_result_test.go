package nodetest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node"
	"github.com/idlegrid/idlegrid/node/executor"
	"github.com/idlegrid/idlegrid/node/executor/executortest"
	"github.com/idlegrid/idlegrid/node/executor/wasm"
	"github.com/idlegrid/idlegrid/node/executor/wasm/demo"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/node/nodetest"
	"github.com/idlegrid/idlegrid/p2p"
	"github.com/idlegrid/idlegrid/store"
)

// TestWrongResultProvenAndExcluded: with market.canary_rate 1, the
// cheapest provider returns a wrong output for every job; the canary run
// on an honest provider disagrees, the renter re-runs the job, proves the
// cheater wrong and gossips the proof. Every other node re-runs it, blocks
// the cheater and zeroes its reputation; the cheater's job ends unverified
// while the honest provider's run stays completed and is paid.
func TestWrongResultProvenAndExcluded(t *testing.T) {
	o := nodetest.Options{
		Configure: func(i int, cfg *node.Config) {
			fastAttest(i, cfg) // the honest run lasts a few windows: it is paid
			cfg.Market.CanaryRate = 1
		},
		ReplayExecutor: nodetest.FakeReplay,
		Executors: func(i int, dir string) []executor.Executor {
			fake := executortest.NewFake(filepath.Join(dir, "fake"), nil)
			fake.Runtime = "wasm"
			if i == 1 { // the cheapest provider
				fake.WrongEvery = 1
			}
			return []executor.Executor{fake}
		},
	}
	provs := []provOpts{{gpus: 1, bronze: 0.5}, {gpus: 1, bronze: 0.6}}
	if os.Getenv("IDLEGRID_SCALE_TESTS") == "1" {
		// 20 nodes, to measure exclusion time across more gossip hops
		// (docs/benchmarks.md): more honest providers, dearer than both.
		for i := range 16 {
			provs = append(provs, provOpts{gpus: 1, bronze: 0.7 + 0.01*float64(i)})
		}
	}
	c, renter := auctionCluster(t, provs, o)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cheat := c.ByRole(node.RoleProvider)[0].Node.ID()
	honest := c.ByRole(node.RoleProvider)[1].Node.ID()

	spec := fmt.Appendf(nil, "name: wrong-result\nmodule: %s\ncommand: [\"sleep:2s\", \"write:result.txt=42\"]\n"+
		"gpus: 1\ngpu: [a10]\ntier: bronze\nmax_price: 5\nduration: 10m\nbid_window: 3s\n", nodetest.DemoModule)
	j, err := renter.Renter().Submit(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := nodetest.WaitFor(ctx, "the cheater's job ends unverified, proven wrong", func() bool {
		j, err = renter.Store().GetJob(j.ID)
		return err == nil && j.State == lease.JobUnverified && hasJobEvent(j, "wrong-result-proven")
	}); err != nil {
		t.Fatalf("%v; job %s %q events %+v", err, j.State, j.Reason, j.Events)
	}
	caught := time.Now()
	if !strings.Contains(j.Reason, lease.Short(cheat.String())) {
		t.Fatalf("reason %q does not name the cheater", j.Reason)
	}
	for _, m := range c.Members {
		if m.Node.ID() == cheat {
			continue
		}
		if err := nodetest.WaitFor(ctx, "member blocks the cheater", func() bool { return m.Node.P2P().Blocked(cheat) }); err != nil {
			t.Fatalf("member %d (%s): %v", m.Index, m.Role, err)
		}
		if r := m.Node.Trust().Reputation().Of(cheat.String()); r.Score != 0 || !r.Fraud {
			t.Fatalf("member %d: the cheater's reputation %+v, want 0 with fraud", m.Index, r)
		}
		if m.Node.P2P().Blocked(honest) {
			t.Fatalf("member %d blocked the honest provider", m.Index)
		}
	}
	t.Logf("every node of %d excluded the cheater %s after the renter proved it wrong", len(c.Members), time.Since(caught).Round(time.Millisecond))
	canary := canaryOf(t, renter, j.ID)
	if canary.State != lease.JobCompleted || !hasJobEvent(canary, "wrong-result-proven") {
		t.Fatalf("canary job %s %q, want completed and confirmed by the re-run; events %+v", canary.State, canary.Reason, canary.Events)
	}
	if err := nodetest.WaitFor(ctx, "the honest provider is paid", func() bool {
		ls := jobLeases(t, renter, canary)
		return len(ls) == 1 && ls[0].Provider == honest.String() && ls[0].PaidMicro > 0
	}); err != nil {
		t.Fatalf("%v: %+v", err, jobLeases(t, renter, canary))
	}
}

// TestFalseWrongResultProofCostsItsSender: a hostile client gossips a
// wrong-result proof accusing an honest provider whose signed output is
// the right one. Every node that gets it re-runs the job, sees the
// accused's output, rejects the proof and lowers the sender's score; the
// accused stays unblocked and the proof goes no further.
func TestFalseWrongResultProofCostsItsSender(t *testing.T) {
	c := nodetest.New(t, 6, nodetest.Options{ReplayExecutor: nodetest.FakeReplay})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	accused := c.Members[1]
	h, topic, targets := hostileFraudClient(t, ctx, c)

	spec := canaryJob("false-proof")
	js, err := auction.ParseJobSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	jobCID, err := js.CID()
	if err != nil {
		t.Fatal(err)
	}
	right := fakeOutput(t, "write:result.txt=42")
	witnessKey, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	proof, err := attest.Seal(&attest.WrongResultProof{
		V: attest.RecordsVersion, Reporter: h.ID().String(), Offender: accused.Node.ID().String(),
		Claims: [][]byte{
			finishedEntry(t, accused.Key, jobCID.String(), right),
			finishedEntry(t, witnessKey, jobCID.String(), executor.CIDOf([]byte("a made-up output"))),
		},
		Spec: spec, Module: demo.Module(),
		Bounds: attest.ReplayBounds{TimeMs: 5000, MemoryMiB: 64, OutputMiB: 1}, AtMs: time.Now().UnixMilli(),
	}, h.Peerstore().PrivKey(h.ID()))
	if err != nil {
		t.Fatal(err)
	}
	if err := topic.Publish(ctx, proof); err != nil {
		t.Fatal(err)
	}
	if err := nodetest.WaitFor(ctx, "the liar's gossip score drops where the proof landed", func() bool {
		for _, m := range targets {
			if m.Node.P2P().GossipScore(h.ID()) < 0 {
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatal(err)
	}
	for _, m := range c.Members {
		if m.Node.P2P().Blocked(accused.Node.ID()) {
			t.Fatalf("member %d blocked the falsely accused provider", m.Index)
		}
		if r := m.Node.Trust().Reputation().Of(accused.Node.ID().String()); r.Fraud {
			t.Fatalf("member %d: the falsely accused provider's reputation %+v", m.Index, r)
		}
		for _, msg := range m.Node.RecentGossip(p2p.TopicFraud) {
			t.Fatalf("member %d delivered the false proof (%d bytes)", m.Index, len(msg.Data))
		}
	}
}

func hasJobEvent(j *store.Job, kind string) bool {
	for _, ev := range j.Events {
		if ev.Kind == kind {
			return true
		}
	}
	return false
}

// canaryOf returns the canary job the renter ran for job id.
func canaryOf(t *testing.T, r *node.Node, id string) *store.Job {
	t.Helper()
	js, err := r.Store().Jobs()
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range js {
		if j.IdempotencyKey == "canary:"+id {
			return j
		}
	}
	t.Fatalf("no canary job for %s", id)
	return nil
}

// finishedEntry returns a finished job event with exit 0 and output out,
// signed by key.
func finishedEntry(t *testing.T, key crypto.PrivKey, job, out string) []byte {
	t.Helper()
	c, err := attest.NewChain(key, nil)
	if err != nil {
		t.Fatal(err)
	}
	self, _ := peer.IDFromPrivateKey(key)
	raw, _, err := c.Append(time.Now().UnixMilli(), &attest.JobEvent{
		Lease: attest.RecordID([]byte("lease of " + self.String())).String(), Renter: self.String(),
		Job: job, Event: attest.JobFinished, Output: out,
	})
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// fakeOutput returns the output CID an honest scripted fake gives args.
func fakeOutput(t *testing.T, args ...string) string {
	t.Helper()
	ex, err := nodetest.FakeReplay(t.TempDir(), nil, wasm.Entropy{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	h, err := ex.Prepare(ctx, executor.Spec{Runtime: "wasm", ModuleCID: nodetest.DemoModule, Args: args})
	if err != nil {
		t.Fatal(err)
	}
	if err := ex.Start(ctx, h); err != nil {
		t.Fatal(err)
	}
	if res, err := ex.Wait(ctx, h); err != nil || res.ExitCode != 0 {
		t.Fatalf("fake run: %+v, %v", res, err)
	}
	out, err := ex.Outputs(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	return out.CID
}

// hostileFraudClient joins the fraud topic with a bare gossipsub (no
// validators) connected to three members, the targets.
func hostileFraudClient(t *testing.T, ctx context.Context, c *nodetest.Cluster) (host.Host, *pubsub.Topic, []*nodetest.Member) {
	t.Helper()
	targets := c.Members[2:5]
	hostile := newBareClient(t, ctx, c, []pubsub.Option{pubsub.WithMessageSignaturePolicy(pubsub.StrictSign)}, targets, p2p.TopicFraud)
	return hostile.h, hostile.topics[p2p.TopicFraud], targets
}
