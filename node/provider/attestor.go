package provider

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/gpu"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/p2p"
	"github.com/idlegrid/idlegrid/store"
)

// attestor keeps the provider's hash chain of signed entries (package
// attest): a hardware fingerprint at start and on change, one telemetry
// attestation per window (sampled from the GPU backend), and the job
// events of its leases. Every entry is stored durably before anything
// else sees it; telemetry entries are the provider's heartbeat on its
// shards' attestation topics, and lease-scoped entries stream to the lease's
// renter.
type attestor struct {
	attestorDeps

	mu     sync.Mutex // serialises appends and the window
	chain  *attest.Chain
	window *attest.TelemetryWindow
	// assigned is the lease (and renter) each GPU serves; inWindow marks
	// the GPUs assigned in the open window (at their first sample, so a
	// GPU that stops reporting does not void the others' window).
	assigned map[string][2]string
	inWindow map[string]bool
	// sampled marks the GPUs with a sample in the open window; an XID for
	// a GPU without one waits in pending (a window may only mention GPUs
	// it has samples of, and one lost GPU must not void the others').
	sampled map[string]bool
	pending []gpu.Event
	// appended is closed and replaced after every append (followers).
	appended chan struct{}
	// beatSlot is the slot of the last heartbeat gossiped (run's
	// goroutine only).
	beatSlot int64
	beaten   bool
	// fingerprintRaw is the fingerprint entry in force, kept from its
	// append (or found at open): a daemon that runs for days buries it
	// under thousands of telemetry entries (1,440 a day at the default
	// 1-minute window), deeper than a look back through the store
	// should go, and every lease's renter needs it to verify the chain.
	fingerprintRaw atomic.Pointer[[]byte]
}

// attestorDeps are the attestor's collaborators.
type attestorDeps struct {
	log  *slog.Logger
	now  func() time.Time
	key  crypto.PrivKey
	self peer.ID
	p2p  *p2p.Node
	db   *store.DB
	// book is the lease book (a lease's attestations stream until it
	// ends).
	book *lease.Book
	gpus gpu.Backend
	// cfg sets the sample and window periods.
	cfg lease.Terms
	// beatEvery is the heartbeat slot (attest.BeatSlot): one telemetry
	// entry per slot is gossiped; 0: every one.
	beatEvery time.Duration
	// onSamples gets every sample read (the operator's charts); may be nil.
	onSamples func([]gpu.Sample)
	// shards are the shards the provider serves now (market.shards):
	// its heartbeats go to their attestation topics, and topics says
	// where else (lotCounts.topics: its lot's; nil: nowhere).
	shards func() []auction.Shard
	topics func(s auction.Shard, topic string) []string
}

// openAttestor continues the chain stored in the node's store. A crash
// between storing an entry and its head leaves the head behind: the last
// stored entry wins.
func openAttestor(d attestorDeps) (*attestor, error) {
	a := &attestor{attestorDeps: d, assigned: map[string][2]string{}, appended: make(chan struct{})}
	var head *attest.Head
	raw, err := a.db.ChainHead()
	switch {
	case err == nil:
		if head, err = attest.UnmarshalHead(raw); err != nil {
			return nil, fmt.Errorf("open chain: %w", err)
		}
	case !errors.Is(err, store.ErrNotFound):
		return nil, fmt.Errorf("open chain: %w", err)
	}
	self := a.self.String()
	from := uint64(0)
	if head != nil {
		from = head.Seq + 1
	}
	later, err := a.db.ChainEntries(self, from, math.MaxUint64)
	if err != nil {
		return nil, fmt.Errorf("open chain: %w", err)
	}
	for _, raw := range later {
		e, err := attest.OpenEntry(raw)
		if err != nil {
			return nil, fmt.Errorf("open chain: stored entry: %w", err)
		}
		h := &attest.Head{V: attest.RecordsVersion, Provider: self, Seq: e.Seq, ID: attest.RecordID(raw).String(), AtMs: e.AtMs}
		switch {
		case e.Fingerprint != nil:
			h.Fingerprint = h.ID
		case head != nil:
			h.Fingerprint = head.Fingerprint
		}
		if e.Telemetry != nil {
			h.Fingerprint = e.Telemetry.Fingerprint
		}
		head = h
	}
	// The window is open from the start: the lease runner may record a
	// job event (a resumed lease ending) before run samples anything.
	a.openWindow(a.now())
	if a.chain, err = attest.NewChain(a.key, head); err != nil {
		return nil, fmt.Errorf("open chain: %w", err)
	}
	if head != nil {
		// The last entry before a restart may have been this slot's
		// heartbeat: another in the slot would only be dropped by every
		// node of the shards.
		a.beatSlot, a.beaten = attest.BeatSlot(self, head.AtMs, a.beatEvery), true
	}
	// Work that outlived a restart (reattached containers) keeps its GPUs
	// attributed in the telemetry.
	leases, err := a.db.Leases()
	if err != nil {
		return nil, fmt.Errorf("open chain: %w", err)
	}
	for _, l := range leases {
		if l.Side == lease.SideProvider && l.ChainSeq != 0 && !lease.State(l.State).Terminal() {
			for _, g := range l.GPUs {
				a.assigned[g] = [2]string{l.ID, l.Renter}
			}
		}
	}
	// The fingerprint is in the chain before the first capacity record
	// names it (fingerprintID): renters refuse GPU bids a record without
	// one backs.
	if err := a.fingerprint(); err != nil {
		a.log.Warn("fingerprint entry", "err", err)
	}
	return a, nil
}

// run appends the fingerprint if the hardware changed since the chain was
// opened, then samples the GPUs every cfg.Sample and closes a telemetry
// window every cfg.Window, until ctx ends.
func (a *attestor) run(ctx context.Context) {
	if err := a.fingerprint(); err != nil {
		a.log.Warn("fingerprint entry", "err", err)
	}
	a.mu.Lock()
	a.openWindow(a.now())
	a.mu.Unlock()
	events, err := a.gpus.Events(ctx)
	if err != nil {
		a.log.Debug("no GPU events", "err", err)
	}
	sample := time.NewTicker(a.cfg.Sample)
	defer sample.Stop()
	window := time.NewTicker(a.cfg.Window)
	defer window.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			a.mu.Lock()
			a.addXID(ev)
			a.mu.Unlock()
		case <-sample.C:
			a.sample(ctx)
		case <-window.C:
			a.mu.Lock()
			raw, err := a.closeWindow(a.now())
			a.openWindow(a.now())
			a.mu.Unlock()
			if err != nil {
				a.log.Warn("telemetry entry", "err", err)
				continue
			}
			if raw != nil {
				a.heartbeat(ctx, raw)
			}
		}
	}
}

// append seals the next entry and stores it (and the head) durably before
// anyone sees it. Callers hold a.mu.
func (a *attestor) append(body attest.Body) ([]byte, error) {
	raw, e, err := a.chain.Append(a.now().UnixMilli(), body)
	if err != nil {
		return nil, err
	}
	if _, err := a.db.PutChainEntry(e.Provider, e.Seq, raw, true); err != nil {
		return nil, err
	}
	if e.Fingerprint != nil {
		a.fingerprintRaw.Store(&raw)
	}
	head, err := attest.MarshalHead(a.chain.Head())
	if err != nil {
		return nil, err
	}
	if err := a.db.PutChainHead(head); err != nil {
		return nil, err
	}
	close(a.appended)
	a.appended = make(chan struct{})
	return raw, nil
}

// openWindow starts a telemetry window. Callers hold a.mu.
func (a *attestor) openWindow(at time.Time) {
	a.window = attest.NewTelemetryWindow(at.UnixMilli(), "")
	a.inWindow = map[string]bool{}
	a.sampled = map[string]bool{}
}

// maxPendingXIDs bounds the XIDs kept for GPUs that stopped reporting.
const maxPendingXIDs = 64

// addXID records an XID in the window if its GPU reported in it, else
// keeps it for the GPU's next reporting window. Callers hold a.mu.
func (a *attestor) addXID(ev gpu.Event) {
	if !a.sampled[ev.UUID] {
		if len(a.pending) < maxPendingXIDs {
			a.pending = append(a.pending, ev)
		}
		return
	}
	a.window.AddXID(ev.UUID, ev.Time.UnixMilli(), ev.XID)
}

// closeWindow appends the window's telemetry entry (nil when it saw no
// sample). Callers hold a.mu.
func (a *attestor) closeWindow(at time.Time) ([]byte, error) {
	t, err := a.window.Close(at.UnixMilli())
	if err != nil {
		if errors.Is(err, attest.ErrWindow) {
			return nil, nil // no samples: nothing to attest
		}
		return nil, err
	}
	if t == nil || len(t.GPUs) == 0 {
		return nil, nil
	}
	return a.append(t)
}

// sample reads the GPUs once into the open window.
func (a *attestor) sample(ctx context.Context) {
	sctx, cancel := context.WithTimeout(ctx, a.cfg.Sample)
	samples, err := a.gpus.Sample(sctx)
	cancel()
	if err != nil && len(samples) == 0 {
		a.log.Debug("sample GPUs", "err", err)
		return
	}
	if a.onSamples != nil {
		a.onSamples(samples)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, s := range samples {
		if lr, ok := a.assigned[s.UUID]; ok && !a.inWindow[s.UUID] {
			if err := a.window.Assign(s.UUID, lr[0], lr[1]); err != nil {
				a.log.Warn("assign GPU in telemetry window", "gpu", s.UUID, "err", err)
			}
			a.inWindow[s.UUID] = true
		}
		if err := a.window.Add(toAttestSample(s)); err != nil {
			a.log.Debug("telemetry sample", "gpu", s.UUID, "err", err)
			continue
		}
		if !a.sampled[s.UUID] {
			a.sampled[s.UUID] = true
			// XIDs that waited for this GPU's next window are stamped at
			// its first sample there (when they were attested).
			kept := a.pending[:0]
			for _, ev := range a.pending {
				if ev.UUID != s.UUID {
					kept = append(kept, ev)
					continue
				}
				if start := time.UnixMilli(s.Time.UnixMilli()); ev.Time.Before(start) {
					ev.Time = start
				}
				a.window.AddXID(ev.UUID, ev.Time.UnixMilli(), ev.XID)
			}
			a.pending = kept
		}
	}
}

func toAttestSample(s gpu.Sample) attest.GPUSample {
	return attest.GPUSample{
		UUID: s.UUID, AtMs: s.Time.UnixMilli(),
		UtilBP:     uint32(math.Round(min(max(s.UtilizationPct, 0), 100) * 100)),
		MemUsedMiB: s.MemoryUsedMiB, TempC: uint32(max(s.TemperatureC, 0)),
		PowerMW:  uint64(math.Round(max(s.PowerW, 0) * 1000)),
		EnergyMJ: s.EnergyMJ, ECCCorrected: s.ECCCorrected, ECCUncorrected: s.ECCUncorrected,
		Throttle: uint64(s.ThrottleReasons),
	}
}

// jobEvent records a lease's start or end in the chain. The open window
// is closed first, so each window names one lease per GPU.
//
// The GPUs are read at both events, whatever the sampling phase: the
// lease's first window then opens with a reading and its last closes with
// one. Without the last, work shorter than the sampling interval, or the
// tail after the last tick, would end in a window with no sample, which
// attests nothing, so the renter could not pay for it and the provider
// would hold no voucher and issue no receipt.
func (a *attestor) jobEvent(l *store.Lease, kind attest.JobEventKind) (seq uint64) {
	if kind.Ends() {
		a.sample(context.Background())
	}
	seq = a.recordJobEvent(l, kind)
	if kind == attest.JobStarted {
		a.sample(context.Background())
	}
	return seq
}

func (a *attestor) recordJobEvent(l *store.Lease, kind attest.JobEventKind) (seq uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	if _, err := a.closeWindow(now); err != nil {
		a.log.Warn("telemetry entry", "err", err)
	}
	ev := &attest.JobEvent{Lease: l.ID, Renter: l.Renter, Job: l.JobCID, Event: kind, GPUs: l.GPUs, Output: l.OutputCID}
	if l.ExitCode != nil {
		ev.ExitCode = int32(*l.ExitCode)
	}
	if l.Artifact != "" && l.Run != nil {
		ev.Artifact, ev.Run = l.Artifact, l.Run
	}
	if _, err := a.append(ev); err != nil {
		a.log.Warn("job event entry", "lease", lease.Short(l.ID), "event", kind, "err", err)
	}
	if h := a.chain.Head(); h != nil {
		seq = h.Seq
	}
	for _, g := range l.GPUs {
		if kind == attest.JobStarted {
			a.assigned[g] = [2]string{l.ID, l.Renter}
		} else if a.assigned[g][0] == l.ID {
			delete(a.assigned, g)
		}
	}
	a.openWindow(now)
	return seq
}

// heartbeat gossips a telemetry entry on the attestation topic of each GPU shard
// the provider serves, or of the CPU shard if it has no GPU
// (auction.BeatShards): the nodes of those shards, the renters that may
// rent from it, keep it as uptime evidence and check it for
// equivocation. Nodes of other shards never carry it. Only the first
// entry of each heartbeat slot is gossiped (attest.BeatSlot), which nodes
// admit one of per slot; the others stay in the chain, which a lease's
// renter reads whole.
func (a *attestor) heartbeat(ctx context.Context, raw []byte) {
	if a.shards == nil {
		return
	}
	e, err := attest.OpenEntry(raw)
	if err != nil {
		a.log.Warn("heartbeat", "err", err)
		return
	}
	slot := attest.BeatSlot(a.self.String(), e.AtMs, a.beatEvery)
	if a.beaten && slot <= a.beatSlot {
		return
	}
	a.beatSlot, a.beaten = slot, true
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for _, s := range auction.BeatShards(a.shards()) {
		for _, topic := range shardTopics(a.topics, s, s.AttestTopic()) {
			if err := a.p2p.Publish(pctx, topic, raw, 0); err != nil {
				a.log.Debug("publish heartbeat", "topic", topic, "err", err)
			}
		}
	}
}

// changed returns a channel closed at the next append.
func (a *attestor) changed() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.appended
}
