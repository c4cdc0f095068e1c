package trust

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/attest"
)

// Replay re-runs a wrong-result proof's job (the spec and module it
// carries) within the proof's bounds and returns the run's exit code and
// output CID. job is the spec CID both claims name. An error wrapping
// attest.ErrFalseProof says the proof is false on its face (the spec does
// not hash to job, the module is not the spec's, the job is not
// deterministic); any other error means the re-run settled nothing.
type Replay func(ctx context.Context, p *attest.WrongResultProof, job string) (exitCode int, output string, err error)

// Per-source bound on re-runs. A wrong-result proof costs its verifier a
// re-run of up to attest.MaxReplayTimeMs; a peer that forwards proofs gets
// at most replaysPerSource re-runs (each attest.ReplayRuns runs of the
// job) per replayWindow from this node (the
// same job and module are re-run once, whoever forwards them). A proof
// arriving past the budget is ignored, neither forwarded nor charged.
const (
	replaysPerSource = 4
	replayWindow     = 10 * time.Minute
	// maxReplaySources and maxReplayOutcomes bound the book's memory.
	maxReplaySources  = 4096
	maxReplayOutcomes = 256
	// replayStartup is what the re-run may take beyond the proof's time
	// bound (compiling the module, packing the output).
	replayStartup = 5 * time.Second
)

// errReplayBudget: the source has had its re-runs for now.
var errReplayBudget = errors.New("the source's re-run budget is spent")

// replayOutcome is one re-run's result, kept by the content it ran.
type replayOutcome struct {
	exitCode int
	output   string
	err      error
}

// replayBook runs re-runs one at a time, charges each to its source
// before it waits for its turn, runs one content once however many
// copies arrive, and remembers outcomes by content.
type replayBook struct {
	run      sync.Mutex // one re-run at a time
	mu       sync.Mutex
	sources  map[peer.ID]*replayBudget
	outcomes map[[32]byte]replayOutcome
	running  map[[32]byte]chan struct{} // re-runs under way, by content
}

type replayBudget struct {
	since time.Time
	used  int
}

func newReplayBook() *replayBook {
	return &replayBook{sources: map[peer.ID]*replayBudget{}, outcomes: map[[32]byte]replayOutcome{}, running: map[[32]byte]chan struct{}{}}
}

// charge takes one re-run from src's budget at now.
func (b *replayBook) charge(src peer.ID, now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.sources) >= maxReplaySources {
		for p, s := range b.sources {
			if now.Sub(s.since) >= replayWindow {
				delete(b.sources, p)
			}
		}
		if len(b.sources) >= maxReplaySources {
			return false
		}
	}
	s := b.sources[src]
	if s == nil || now.Sub(s.since) >= replayWindow {
		s = &replayBudget{since: now}
		b.sources[src] = s
	}
	if s.used >= replaysPerSource {
		return false
	}
	s.used++
	return true
}

// begin marks key's re-run as running and returns mine = true, or
// returns the channel closed when the copy already running it ends.
func (b *replayBook) begin(key [32]byte) (running chan struct{}, mine bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if ch, ok := b.running[key]; ok {
		return ch, false
	}
	ch := make(chan struct{})
	b.running[key] = ch
	return ch, true
}

// end marks key's re-run as ended (remembered or not).
func (b *replayBook) end(key [32]byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	close(b.running[key])
	delete(b.running, key)
}

func (b *replayBook) outcome(key [32]byte) (replayOutcome, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	o, ok := b.outcomes[key]
	return o, ok
}

func (b *replayBook) remember(key [32]byte, o replayOutcome) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.outcomes) >= maxReplayOutcomes {
		clear(b.outcomes)
	}
	b.outcomes[key] = o
}

// replayKey names what a re-run ran: the job, the spec, the module and
// the bounds. Two proofs that differ only in who they accuse share it.
func replayKey(w *attest.WrongResultProof, job string) [32]byte {
	h := sha256.New()
	for _, b := range [][]byte{[]byte(job), w.Spec, w.Module} {
		_ = binary.Write(h, binary.BigEndian, uint64(len(b)))
		h.Write(b)
	}
	_ = binary.Write(h, binary.BigEndian, []int64{w.Bounds.TimeMs, w.Bounds.MemoryMiB, w.Bounds.OutputMiB})
	return [32]byte(h.Sum(nil))
}

// JudgeWrongResult verifies a wrong-result proof: its claims (pure, in
// attest) and then a re-run of the job, charged to src (the peer it came
// from; this node's own proofs are not charged). It returns the offender,
// or an error wrapping attest.ErrFalseProof (the proof is false: its
// sender pays), attest.ErrUnprovable (the re-run settled nothing) or
// errReplayBudget.
func (t *Trust) JudgeWrongResult(ctx context.Context, src peer.ID, raw []byte) (peer.ID, error) {
	w, err := attest.OpenWrongResult(raw)
	if err != nil {
		return "", err
	}
	c, err := w.Claim(t.now())
	if err != nil {
		return "", err
	}
	if t.replay == nil {
		return "", fmt.Errorf("%w: this node does not re-run jobs", attest.ErrUnprovable)
	}
	o, err := t.replayOutcome(ctx, src, w, c.Job)
	if err != nil {
		return "", err
	}
	switch {
	case errors.Is(o.err, attest.ErrFalseProof):
		return "", o.err
	case o.err != nil:
		return "", fmt.Errorf("%w: the re-run: %w", attest.ErrUnprovable, o.err)
	}
	if err := c.Judge(o.exitCode, o.output); err != nil {
		return "", err
	}
	return c.Offender, nil
}

// replayOutcome returns the outcome of re-running w's job: remembered,
// or awaited when another copy is running it, or run now (runReplay).
func (t *Trust) replayOutcome(ctx context.Context, src peer.ID, w *attest.WrongResultProof, job string) (replayOutcome, error) {
	key := replayKey(w, job)
	for {
		if o, ok := t.replays.outcome(key); ok {
			return o, nil
		}
		running, mine := t.replays.begin(key)
		if mine {
			return t.runReplay(ctx, src, key, w, job)
		}
		select {
		case <-running: // remembered now, or that run was cut short: look again
		case <-ctx.Done():
			return replayOutcome{}, fmt.Errorf("%w: %w", attest.ErrUnprovable, ctx.Err())
		}
	}
}

// runReplay re-runs w's job at src's charge, after the re-runs before it
// (one at a time), and remembers the outcome.
func (t *Trust) runReplay(ctx context.Context, src peer.ID, key [32]byte, w *attest.WrongResultProof, job string) (replayOutcome, error) {
	defer t.replays.end(key)
	if o, ok := t.replays.outcome(key); ok { // it ended just before begin
		return o, nil
	}
	if src != t.self && !t.replays.charge(src, t.now()) {
		return replayOutcome{}, errReplayBudget
	}
	t.replays.run.Lock()
	defer t.replays.run.Unlock()
	var o replayOutcome
	rctx, cancel := context.WithTimeout(ctx, attest.ReplayRuns*(time.Duration(w.Bounds.TimeMs)*time.Millisecond+replayStartup))
	o.exitCode, o.output, o.err = t.replay(rctx, w, job)
	cancel()
	if ctx.Err() != nil {
		return replayOutcome{}, fmt.Errorf("%w: %w", attest.ErrUnprovable, ctx.Err())
	}
	t.replays.remember(key, o)
	return o, nil
}

// provenWrongResult returns the offender of a wrong-result proof this
// node stored after judging it (BlockProven, reputation): the claims are
// checked again, the re-run is not.
func (t *Trust) provenWrongResult(raw []byte) (peer.ID, int64, bool) {
	w, err := attest.OpenWrongResult(raw)
	if err != nil {
		return "", 0, false
	}
	c, err := w.Claim(t.now())
	if err != nil {
		return "", 0, false
	}
	return c.Offender, w.AtMs, true
}
