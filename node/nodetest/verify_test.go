package nodetest_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/node"
	"github.com/idlegrid/idlegrid/node/executor"
	"github.com/idlegrid/idlegrid/node/executor/executortest"
	"github.com/idlegrid/idlegrid/node/jobproto"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/node/nodetest"
)

// idleExecutor never runs anything: Prepare waits until it is given up on.
type idleExecutor struct{ *executortest.Fake }

func (idleExecutor) Prepare(ctx context.Context, _ executor.Spec) (executor.Handle, error) {
	<-ctx.Done()
	return "", ctx.Err()
}

// noRunPeer answers the job protocol as a provider that never ran the
// work would: every lease is "completed, exit 0" with an empty output
// tar, and its chain holds no entries. It counts the vouchers it gets.
type noRunPeer struct {
	tar      string
	out      executor.Output
	vouchers atomic.Int64
}

func newNoRunPeer(t *testing.T) *noRunPeer {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "out"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := executor.PackOutputs(filepath.Join(dir, "out"), filepath.Join(dir, "out.tar"), 0)
	if err != nil {
		t.Fatal(err)
	}
	return &noRunPeer{tar: out.Path, out: out}
}

func (p *noRunPeer) serve(ctx context.Context, _ peer.ID, raw []byte, send func([]byte) error) error {
	req, err := jobproto.DecodeRequest(raw)
	if err != nil {
		return lease.Refuse(send, jobproto.CodeInvalid, "%v", err)
	}
	zero, now := 0, time.Now().UnixMilli()
	st := &jobproto.Status{Version: 1, State: lease.Completed, ExitCode: &zero, StartedMs: now - 1000, FinishedMs: now,
		OutputCID: p.out.CID, OutputSize: p.out.Size}
	switch req.Op {
	case jobproto.OpVoucher:
		p.vouchers.Add(1)
		return lease.SendHeader(send, &jobproto.Header{Status: st})
	case jobproto.OpStatus, jobproto.OpCancel:
		return lease.SendHeader(send, &jobproto.Header{Status: st})
	case jobproto.OpAttest:
		return lease.SendHeader(send, &jobproto.Header{}) // no chain entries
	case jobproto.OpResult:
		f, err := os.Open(p.tar)
		if err != nil {
			return err
		}
		defer f.Close()
		if _, err := f.Seek(req.Offset, io.SeekStart); err != nil {
			return err
		}
		if err := lease.SendHeader(send, &jobproto.Header{CID: p.out.CID, Size: p.out.Size - req.Offset}); err != nil {
			return err
		}
		return lease.SendData(ctx, send, f)
	}
	return lease.Refuse(send, jobproto.CodeNotFound, "nothing here")
}

// TestNoRunPeerIsNeverCompleted: a provider that bids and answers
// "completed" with an empty output but never ran the work (no chain
// entries) gets no completed job: the renter records the lease and the
// job unverified with the reason, pays nothing, never serves the output
// and counts the lease as a failure in the provider's reputation.
func TestNoRunPeerIsNeverCompleted(t *testing.T) {
	o := nodetest.Options{Executors: func(i int, dir string) []executor.Executor {
		fake := executortest.NewFake(filepath.Join(dir, "fake"), nil)
		fake.Runtime = "wasm"
		return []executor.Executor{idleExecutor{fake}}
	}}
	c, renter := auctionCluster(t, []provOpts{{gpus: 1, bronze: 0.5}}, o)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cheater := c.ByRole(node.RoleProvider)[0].Node
	fake := newNoRunPeer(t)
	cheater.P2P().HandleFrames(lease.JobProto, "idlegrid.job", lease.JobLimits, fake.serve)

	j, err := renter.Renter().Submit(reputationJob("no-run", "bronze"))
	if err != nil {
		t.Fatal(err)
	}
	j = waitJob(t, ctx, renter, j.ID, lease.JobCompleted, lease.JobUnverified, lease.JobFailed)
	if j.State != lease.JobUnverified || !strings.Contains(j.Reason, "no entries") {
		t.Fatalf("job %s: %q, want unverified for an empty chain", j.State, j.Reason)
	}
	ls := jobLeases(t, renter, j)
	if len(ls) != 1 || ls[0].State != lease.Unverified || ls[0].Provider != cheater.ID().String() {
		t.Fatalf("renter's leases %+v", ls)
	}
	l := ls[0]
	if l.PaidMicro != 0 || fake.vouchers.Load() != 0 {
		t.Errorf("the no-run peer was paid: %d µUSD, %d vouchers", l.PaidMicro, fake.vouchers.Load())
	}
	if _, err := renter.Store().Voucher(l.ID); err == nil {
		t.Error("the renter signed a voucher for the no-run lease")
	}
	if _, _, err := renter.Renter().Result(ctx, j.ID, l.ID); err == nil || !strings.Contains(err.Error(), "unverified") {
		t.Errorf("result of the unverified lease: err %v, want a refusal", err)
	}
	if err := nodetest.WaitFor(ctx, "the lease counted in reputation", func() bool {
		r := renter.Trust().Reputation().Of(cheater.ID().String())
		return r.OwnFailures == 1 && r.OwnSuccesses == 0
	}); err != nil {
		t.Fatalf("%v: %+v", err, renter.Trust().Reputation().Of(cheater.ID().String()))
	}
}

// canaryJob is a deterministic job (the fake "wasm" runtime) with an output.
func canaryJob(name string) []byte {
	return fmt.Appendf(nil, "name: %s\nmodule: %s\ncommand: [\"write:result.txt=42\"]\ngpus: 1\ngpu: [a10]\ntier: bronze\nmax_price: 5\nduration: 10m\nbid_window: 3s\n",
		name, nodetest.DemoModule)
}

// TestCanaryCatchesAWrongOutput: with market.canary_rate 1 every
// deterministic job is re-run on a second provider. The cheapest provider
// returns a wrong output for every second job: its first job agrees with
// the canary run, its second does not, and that job and its canary end
// unverified naming both providers.
func TestCanaryCatchesAWrongOutput(t *testing.T) {
	o := nodetest.Options{
		Configure: func(_ int, cfg *node.Config) { cfg.Market.CanaryRate = 1 },
		Executors: func(i int, dir string) []executor.Executor {
			fake := executortest.NewFake(filepath.Join(dir, "fake"), nil)
			fake.Runtime = "wasm"
			if i == 1 { // the cheapest provider
				fake.WrongEvery = 2
			}
			return []executor.Executor{fake}
		},
	}
	c, renter := auctionCluster(t, []provOpts{{gpus: 1, bronze: 0.5}, {gpus: 1, bronze: 0.6}}, o)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cheat := c.ByRole(node.RoleProvider)[0].Node.ID().String()

	hasEvent := func(id, kind string) bool {
		j, err := renter.Store().GetJob(id)
		if err != nil {
			return false
		}
		for _, ev := range j.Events {
			if ev.Kind == kind {
				return true
			}
		}
		return false
	}
	for round, want := range []string{"canary-agreed", "canary-disagreed"} {
		j, err := renter.Renter().Submit(canaryJob(fmt.Sprintf("canary-%d", round)))
		if err != nil {
			t.Fatal(err)
		}
		j = waitJob(t, ctx, renter, j.ID, lease.JobCompleted, lease.JobUnverified, lease.JobFailed, lease.JobUnfilled)
		if ls := jobLeases(t, renter, j); len(ls) != 1 || ls[0].Provider != cheat {
			t.Fatalf("job %d: leases %+v, want one on the cheapest provider", round, ls)
		}
		if err := nodetest.WaitFor(ctx, "the canary's verdict "+want, func() bool { return hasEvent(j.ID, want) }); err != nil {
			j, _ = renter.Store().GetJob(j.ID)
			t.Fatalf("job %d: %v; events %+v", round, err, j.Events)
		}
		j, _ = renter.Store().GetJob(j.ID)
		if want == "canary-disagreed" && (j.State != lease.JobUnverified || !strings.Contains(j.Reason, lease.Short(cheat))) {
			t.Fatalf("job %d: %s %q, want unverified naming the cheating provider", round, j.State, j.Reason)
		}
		if want == "canary-agreed" && j.State != lease.JobCompleted {
			t.Fatalf("job %d: %s %q after the canary agreed", round, j.State, j.Reason)
		}
	}
}
