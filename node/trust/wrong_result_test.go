package trust

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/p2p"
)

const (
	rightOutput = "bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku"
	wrongOutput = "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy"
)

func judgeKey(t *testing.T) (crypto.PrivKey, peer.ID) {
	t.Helper()
	sk, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := peer.IDFromPrivateKey(sk)
	return sk, id
}

func finished(t *testing.T, key crypto.PrivKey, out string, now time.Time) []byte {
	t.Helper()
	c, err := attest.NewChain(key, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, renter := judgeKey(t)
	raw, _, err := c.Append(now.UnixMilli(), &attest.JobEvent{
		Lease: attest.RecordID([]byte(out)).String(), Renter: renter.String(), Job: attest.RecordID([]byte("spec")).String(),
		Event: attest.JobFinished, Output: out,
	})
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// judgeFixture is a trust room with only what judging needs, and a
// replay that counts its runs and gives rightOutput.
func judgeFixture(t *testing.T) (*Trust, *atomic.Int32, time.Time) {
	now := time.Now()
	_, self := judgeKey(t)
	var runs atomic.Int32
	tr := &Trust{
		log: slog.New(slog.DiscardHandler), now: func() time.Time { return now }, self: self, selfStr: self.String(), replays: newReplayBook(),
		replay: func(context.Context, *attest.WrongResultProof, string) (int, string, error) {
			runs.Add(1)
			return 0, rightOutput, nil
		},
	}
	return tr, &runs, now
}

// wrongProof seals a proof accusing the provider that signed offOut.
func wrongProof(t *testing.T, now time.Time, offOut, witOut string, module byte) []byte {
	t.Helper()
	offKey, offID := judgeKey(t)
	witKey, _ := judgeKey(t)
	repKey, repID := judgeKey(t)
	raw, err := attest.Seal(&attest.WrongResultProof{
		V: attest.RecordsVersion, Reporter: repID.String(), Offender: offID.String(),
		Claims: [][]byte{finished(t, offKey, offOut, now), finished(t, witKey, witOut, now)},
		Spec:   []byte("spec"), Module: []byte{module},
		Bounds: attest.ReplayBounds{TimeMs: 1000, MemoryMiB: 16, OutputMiB: 1}, AtMs: now.UnixMilli(),
	}, repKey)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func TestWrongResultVerdicts(t *testing.T) {
	tr, runs, now := judgeFixture(t)
	_, src := judgeKey(t)
	if v := tr.ValidateFraud(t.Context(), src, src, wrongProof(t, now, wrongOutput, rightOutput, 1)); v != p2p.Accept {
		t.Errorf("true proof: verdict %v, want Accept", v)
	}
	// The same job accusing the honest provider: false, and no new re-run.
	if v := tr.ValidateFraud(t.Context(), src, src, wrongProof(t, now, rightOutput, wrongOutput, 1)); v != p2p.Reject {
		t.Errorf("false proof: verdict %v, want Reject", v)
	}
	if runs.Load() != 1 {
		t.Errorf("%d re-runs of one job, want 1", runs.Load())
	}
	// A re-run matching neither output settles nothing: ignored.
	if v := tr.ValidateFraud(t.Context(), src, src, wrongProof(t, now, wrongOutput, attest.RecordID([]byte("x")).String(), 2)); v != p2p.Ignore {
		t.Errorf("unsettled proof: verdict %v, want Ignore", v)
	}
	// Forged: the bytes changed after signing, or another key than the
	// reporter's signed it. Rejected before any re-run.
	before := runs.Load()
	forged := wrongProof(t, now, wrongOutput, rightOutput, 4)
	forged[len(forged)-1] ^= 1
	if v := tr.ValidateFraud(t.Context(), src, src, forged); v != p2p.Reject {
		t.Errorf("tampered proof: verdict %v, want Reject", v)
	}
	w, err := attest.OpenWrongResult(wrongProof(t, now, wrongOutput, rightOutput, 5))
	if err != nil {
		t.Fatal(err)
	}
	otherKey, _ := judgeKey(t)
	resigned, err := attest.Seal(w, otherKey)
	if err != nil {
		t.Fatal(err)
	}
	if v := tr.ValidateFraud(t.Context(), src, src, resigned); v != p2p.Reject {
		t.Errorf("proof signed by another key than its reporter's: verdict %v, want Reject", v)
	}
	if runs.Load() != before {
		t.Errorf("forged proofs were re-run: %d re-runs", runs.Load()-before)
	}
	// A replay that finds the proof false on its face (spec, module).
	tr.replay = func(context.Context, *attest.WrongResultProof, string) (int, string, error) {
		return 0, "", attest.ErrFalseProof
	}
	if v := tr.ValidateFraud(t.Context(), src, src, wrongProof(t, now, wrongOutput, rightOutput, 3)); v != p2p.Reject {
		t.Errorf("proof with a false spec: verdict %v, want Reject", v)
	}
}

func TestWrongResultReplayBudgetPerSource(t *testing.T) {
	tr, runs, now := judgeFixture(t)
	_, greedy := judgeKey(t)
	_, other := judgeKey(t)
	for i := range replaysPerSource {
		if _, err := tr.JudgeWrongResult(t.Context(), greedy, wrongProof(t, now, wrongOutput, rightOutput, byte(i))); err != nil {
			t.Fatalf("proof %d: %v", i, err)
		}
	}
	_, err := tr.JudgeWrongResult(t.Context(), greedy, wrongProof(t, now, wrongOutput, rightOutput, 100))
	if !errors.Is(err, errReplayBudget) {
		t.Fatalf("over the budget: %v, want errReplayBudget", err)
	}
	if v := tr.ValidateFraud(t.Context(), greedy, greedy, wrongProof(t, now, wrongOutput, rightOutput, 101)); v != p2p.Ignore {
		t.Errorf("over the budget: verdict %v, want Ignore", v)
	}
	// A job already re-run costs nothing; another source has its own budget.
	if _, err := tr.JudgeWrongResult(t.Context(), greedy, wrongProof(t, now, wrongOutput, rightOutput, 0)); err != nil {
		t.Errorf("a job already re-run: %v", err)
	}
	if _, err := tr.JudgeWrongResult(t.Context(), other, wrongProof(t, now, wrongOutput, rightOutput, 100)); err != nil {
		t.Errorf("another source: %v", err)
	}
	// This node's own proofs are not charged.
	if _, err := tr.JudgeWrongResult(t.Context(), tr.self, wrongProof(t, now, wrongOutput, rightOutput, 102)); err != nil {
		t.Errorf("own proof: %v", err)
	}
	if got := runs.Load(); got != replaysPerSource+2 {
		t.Errorf("%d re-runs, want %d", got, replaysPerSource+2)
	}
	// The budget comes back after the window.
	now = now.Add(replayWindow)
	tr.now = func() time.Time { return now }
	if _, err := tr.JudgeWrongResult(t.Context(), greedy, wrongProof(t, now, wrongOutput, rightOutput, 103)); err != nil {
		t.Errorf("after the window: %v", err)
	}
}

// TestWrongResultCopiesShareOneReplay: copies of one proof arriving from
// many peers at once wait for one re-run, charged to one of them.
func TestWrongResultCopiesShareOneReplay(t *testing.T) {
	tr, runs, now := judgeFixture(t)
	release := make(chan struct{})
	inner := tr.replay
	tr.replay = func(ctx context.Context, p *attest.WrongResultProof, job string) (int, string, error) {
		<-release
		return inner(ctx, p, job)
	}
	proof := wrongProof(t, now, wrongOutput, rightOutput, 1)
	const copies = 8
	errs := make(chan error, copies)
	for range copies {
		_, src := judgeKey(t)
		go func() {
			_, err := tr.JudgeWrongResult(t.Context(), src, proof)
			errs <- err
		}()
	}
	close(release)
	for range copies {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if runs.Load() != 1 {
		t.Errorf("%d re-runs for %d copies, want 1", runs.Load(), copies)
	}
	charged := 0
	for _, b := range tr.replays.sources {
		charged += b.used
	}
	if charged != 1 {
		t.Errorf("%d re-runs charged, want 1", charged)
	}
}
