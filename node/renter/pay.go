package renter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/big"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/node/failpoint"
	"github.com/idlegrid/idlegrid/node/jobproto"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/p2p"
	"github.com/idlegrid/idlegrid/store"
)

// payer pays for one running lease: it follows the provider's chain from
// the lease's start, verifies it (package attest's checks, scoped to the
// lease) whenever a telemetry window arrives, and signs a cumulative
// voucher covering up to the end of the last verified window. Telemetry
// that fails a check, or that stops coming, stops the payments: the
// provider then stops the work after its grace, so neither side risks more
// than about one interval.
type payer struct {
	a        *Renter
	l        *store.Lease
	provider peer.ID

	fingerprints [][]byte
	entries      [][]byte
	next         uint64 // chain seq to ask for after a reconnect
	seq          uint64 // vouchers sent
	coveredMs    int64  // what the last voucher covers
	undelivered  []byte // the last voucher, until the provider acknowledged it
	lastWindow   time.Time
	stopped      string // why payments stopped ("" while paying)
	// unhealthySince is when the service lease was first seen unhealthy.
	unhealthySince time.Time
}

// payLease runs until ctx ends (the lease ended or the job stopped).
func (a *Renter) payLease(ctx context.Context, l *store.Lease) {
	done := a.payerStarted(l.ID)
	defer close(done)
	p, err := peer.Decode(l.Provider)
	if err != nil {
		return
	}
	py := &payer{a: a, l: l, provider: p, lastWindow: a.now()}
	if v, err := a.db.Voucher(l.ID); err == nil {
		if pv, err := attest.OpenVoucher(v); err == nil {
			// Continue after a restart: the provider accepts only the next
			// seq and never less coverage, and may not have received the
			// stored voucher before the renter stopped.
			py.seq, py.coveredMs, py.undelivered = pv.Seq, pv.CoveredUntilMs, v
		}
	}
	cfg := a.cfg.Attest
	if cfg.PrepayIntervals > 0 && py.seq == 0 {
		start := time.UnixMilli(l.StartsAtMs)
		py.pay(ctx, start.Add(time.Duration(cfg.PrepayIntervals)*cfg.VoucherInterval), "")
	}
	if len(l.GPUs) == 0 {
		py.payByTime(ctx) // CPU-only work: no telemetry windows (pay_cpu.go)
		return
	}
	late := max(cfg.VoucherInterval, cfg.Window) + cfg.VoucherGrace
	backoff := 500 * time.Millisecond
	// At least one pass, even for a lease that ended before the payer
	// started: the chain still holds the windows to pay for.
	for first := true; ctx.Err() == nil && (first || !py.ended()); first = false {
		err := py.follow(ctx, late)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			a.log.Debug("attestation stream ended", "lease", lease.Short(l.ID), "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 10*time.Second)
	}
}

// follow reads the provider's attestation stream until it ends, checking
// for late telemetry as it waits.
func (py *payer) follow(ctx context.Context, late time.Duration) error {
	a := py.a
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	_, fr, err := a.jobCall(sctx, py.provider, &jobproto.Request{Op: jobproto.OpAttest, Lease: py.l.ID, After: py.next, Follow: true})
	if err != nil {
		py.checkLate(late)
		return err
	}
	defer fr.Close()
	frames := make(chan []byte)
	errc := make(chan error, 1)
	go func() {
		for {
			b, err := fr.Next()
			if err != nil {
				errc <- err
				return
			}
			select {
			case frames <- append([]byte(nil), b...):
			case <-sctx.Done():
				errc <- sctx.Err()
				return
			}
		}
	}()
	tick := time.NewTicker(max(late/4, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-errc:
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		case <-tick.C:
			py.checkLate(late)
		case raw := <-frames:
			py.entry(ctx, raw)
		}
	}
}

// ended reports whether the lease ended (as the renter last heard).
func (py *payer) ended() bool {
	l, err := py.a.db.GetLease(py.l.ID)
	return err != nil || lease.State(l.State).Terminal()
}

// checkLate stops the payments once telemetry is late beyond the grace.
func (py *payer) checkLate(late time.Duration) {
	if py.stopped == "" && py.a.now().Sub(py.lastWindow) > late && !py.ended() {
		py.stop(fmt.Sprintf("no telemetry from the provider for %s", py.a.now().Sub(py.lastWindow).Round(time.Second)))
	}
	py.checkUnhealthy(late)
}

func (py *payer) stop(why string) {
	py.stopped = why
	py.a.jobs.event(py.l.RenterJobID(), "payment-stopped", "lease %s: payments stopped: %s", lease.Short(py.l.ID), why)
	py.a.log.Warn("payments stopped", "lease", lease.Short(py.l.ID), "reason", why)
}

// entry takes one chain entry from the stream; a telemetry window is
// verified with everything before it and, if it passes, paid for.
func (py *payer) entry(ctx context.Context, raw []byte) {
	e, err := attest.OpenEntry(raw)
	if err != nil {
		py.stop("the provider sent an invalid chain entry: " + err.Error())
		return
	}
	if e.Fingerprint != nil && !py.hasFingerprint(raw) {
		py.fingerprints = append(py.fingerprints, raw)
	}
	switch {
	case len(py.entries) == 0 && e.Fingerprint != nil:
		return // the fingerprint in force, sent ahead of the lease's segment
	case len(py.entries) > 0 && e.Seq < py.next:
		return // already verified (a reconnect repeats it)
	}
	py.entries = append(py.entries, raw)
	py.next = e.Seq + 1
	py.checkDoubleLease(ctx, e)
	if e.Telemetry == nil {
		return
	}
	py.lastWindow = py.a.now()
	if py.stopped != "" {
		return
	}
	rep := attest.Verify(py.entries, py.verifyOptions())
	if !rep.OK() {
		fs := rep.Failures()
		py.stop(fmt.Sprintf("telemetry failed the %q check: %s", fs[0].Check, fs[0].Message))
		return
	}
	py.pay(ctx, time.UnixMilli(e.Telemetry.EndMs), attest.RecordID(raw).String())
}

func (py *payer) hasFingerprint(raw []byte) bool {
	for _, f := range py.fingerprints {
		if string(f) == string(raw) {
			return true
		}
	}
	return false
}

func (py *payer) verifyOptions() attest.VerifyOptions {
	cfg := py.a.cfg.Attest
	l := py.l
	start := l.StartsAtMs
	if cur, err := py.a.db.GetLease(l.ID); err == nil && cur.WorkStartedMs != 0 {
		start = cur.WorkStartedMs
	}
	return attest.VerifyOptions{
		Provider: l.Provider, NowMs: py.a.now().UnixMilli(), MaxSkewMs: cfg.MaxSkew.Milliseconds(),
		Fingerprints:       py.fingerprints,
		EnergyTolerancePct: uint32(cfg.EnergyTolerance * 100),
		Lease:              &attest.LeaseScope{ID: l.ID, Renter: l.Renter, StartMs: start, GPUs: l.GPUs},
		MaxGapMs:           (max(cfg.Window, cfg.VoucherInterval) + cfg.VoucherGrace).Milliseconds(),
	}
}

// pay signs and sends a cumulative voucher covering the lease up to until.
func (py *payer) pay(ctx context.Context, until time.Time, telemetry string) {
	a, l := py.a, py.l
	if a.withhold != nil && a.withhold(l.ID) {
		return
	}
	start := time.UnixMilli(l.StartsAtMs)
	if until.Before(start) || until.UnixMilli() <= py.coveredMs {
		return // already paid (a reconnect or restart replays the chain)
	}
	if py.undelivered != nil {
		// The provider needs it to accept the next seq; if it already
		// holds it, it refuses this copy and no harm is done.
		py.send(ctx, py.undelivered)
	}
	py.seq++
	v := &attest.Voucher{
		V: attest.RecordsVersion, Lease: l.ID, Renter: l.Renter, Provider: l.Provider, Seq: py.seq,
		AmountMicro: owed(l.PriceMicro, leaseUnits(len(l.GPUs)), until.Sub(start)), CoveredUntilMs: until.UnixMilli(),
		Telemetry: telemetry, IssuedMs: py.a.now().UnixMilli(),
	}
	raw, err := attest.SealVoucher(v, a.key)
	if err != nil {
		a.log.Warn("seal voucher", "lease", lease.Short(l.ID), "err", err)
		return
	}
	// Stored before it is sent: the renter owes what it signed.
	if err := a.db.PutVoucher(l.ID, raw); err != nil {
		a.log.Warn("store voucher", "lease", lease.Short(l.ID), "err", err)
		return
	}
	py.coveredMs, py.undelivered = v.CoveredUntilMs, raw
	if _, err := a.leases.Update(l.ID, func(s *store.Lease) bool {
		s.PaidMicro, s.PaidUntilMs = v.AmountMicro, v.CoveredUntilMs
		return true
	}); err != nil {
		a.log.Warn("store lease", "lease", lease.Short(l.ID), "err", err)
	}
	failpoint.Hit(failpoint.RenterVoucherStored)
	py.send(ctx, raw)
}

// send delivers a voucher to the provider; once the provider answered
// (acknowledged or refused it) it is not sent again.
func (py *payer) send(ctx context.Context, raw []byte) {
	a, l := py.a, py.l
	// A voucher on its way is delivered even if the lease just ended and
	// its following stops: it pays for the last window.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	_, fr, err := a.jobCall(cctx, py.provider, &jobproto.Request{Op: jobproto.OpVoucher, Lease: l.ID, Voucher: raw})
	var re *jobproto.RemoteError
	if errors.As(err, &re) {
		a.log.Debug("voucher refused", "lease", lease.Short(l.ID), "err", err)
		py.undelivered = nil
		return
	}
	if err != nil {
		a.log.Info("voucher not delivered (sent again before the next one)", "lease", lease.Short(l.ID), "err", err)
		return
	}
	_ = fr.Close()
	py.undelivered = nil
}

// owed is the cumulative amount for gpus GPUs over d at price uUSD per
// GPU-hour, rounded down to the micro-dollar.
func owed(priceMicro uint64, gpus int, d time.Duration) uint64 {
	x := new(big.Int).SetUint64(priceMicro)
	x.Mul(x, big.NewInt(int64(gpus)))
	x.Mul(x, big.NewInt(d.Milliseconds()))
	x.Quo(x, big.NewInt(int64(time.Hour/time.Millisecond)))
	return x.Uint64()
}

// payerStarted registers a lease's payer; the returned channel is closed
// when it returns.
func (a *Renter) payerStarted(id string) chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.payers == nil {
		a.payers = map[string]chan struct{}{}
	}
	ch := make(chan struct{})
	a.payers[id] = ch
	return ch
}

// payerDone waits (bounded) for a lease's payer to have paid for the last
// window it saw, so the lease is settled over the renter's final voucher.
func (a *Renter) payerDone(ctx context.Context, id string) {
	a.mu.Lock()
	ch := a.payers[id]
	a.mu.Unlock()
	if ch == nil {
		return
	}
	select {
	case <-ch:
	case <-ctx.Done():
	case <-time.After(30 * time.Second):
	}
	a.mu.Lock()
	if a.payers[id] == ch {
		delete(a.payers, id)
	}
	a.mu.Unlock()
}

// fetchReceipt settles an ended lease: it delivers the renter's latest
// voucher (again: if the provider holds it already it refuses the copy,
// harmlessly), then asks for the receipt, checks it (both signatures, this
// lease and parties, over the renter's latest voucher) and stores it.
func (a *Renter) fetchReceipt(ctx context.Context, l *store.Lease) {
	p, err := peer.Decode(l.Provider)
	if err != nil {
		return
	}
	a.payerDone(ctx, l.ID)
	var latest *attest.Voucher
	if raw, err := a.db.Voucher(l.ID); err == nil {
		latest, _ = attest.OpenVoucher(raw)
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		if _, fr, err := a.jobCall(cctx, p, &jobproto.Request{Op: jobproto.OpVoucher, Lease: l.ID, Voucher: raw}); err == nil {
			_ = fr.Close()
		}
		cancel()
	}
	for attempt := range 8 {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		h, fr, err := a.jobCall(cctx, p, &jobproto.Request{Op: jobproto.OpReceipt, Lease: l.ID})
		cancel()
		if err == nil {
			_ = fr.Close()
			rc, v, err := attest.OpenReceipt(h.Receipt)
			if err != nil || rc.Lease != l.ID || rc.Provider != l.Provider || v.Renter != a.ID().String() {
				a.log.Warn("bad receipt", "lease", lease.Short(l.ID), "err", err)
				return
			}
			// The provider re-issues the receipt when the last voucher
			// reaches it; wait for the one over ours.
			if latest == nil || v.Seq >= latest.Seq || attempt == 7 {
				if err := a.db.PutReceipt(attest.RecordID(h.Receipt).String(), h.Receipt); err != nil {
					a.log.Warn("store receipt", "lease", lease.Short(l.ID), "err", err)
					return
				}
				if _, err := a.leases.Update(l.ID, func(s *store.Lease) bool { s.Receipt = h.Receipt; return true }); err != nil {
					a.log.Warn("store receipt", "lease", lease.Short(l.ID), "err", err)
				}
				return
			}
		} else {
			var re *jobproto.RemoteError
			if errors.As(err, &re) && re.Code != jobproto.CodeNotReady {
				return // never paid: no receipt
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Duration(attempt+1) * 300 * time.Millisecond):
		}
	}
}

// maxProofEntries bounds a double-lease proof's segment (attest's limit).
const maxProofEntries = 256

// claims reports whether entry e puts gpu to work for lease (a start
// event, or a telemetry window attributing the GPU to it), and for whom.
func claims(e *attest.Entry, gpu string) (lease, renter string, ok bool) {
	switch {
	case e.Job != nil && e.Job.Event == attest.JobStarted:
		for _, g := range e.Job.GPUs {
			if g == gpu {
				return e.Job.Lease, e.Job.Renter, true
			}
		}
	case e.Telemetry != nil:
		for _, g := range e.Telemetry.GPUs {
			if g.UUID == gpu && g.Lease != "" {
				return g.Lease, g.Renter, true
			}
		}
	}
	return "", "", false
}

// checkDoubleLease looks at the newest entry of the lease's segment: if
// the provider's own chain puts one of this lease's GPUs to work for
// another renter while this lease has not ended, the segment is a
// double-lease proof. The renter seals it, applies it and gossips it.
func (py *payer) checkDoubleLease(ctx context.Context, e *attest.Entry) {
	for _, gpu := range py.l.GPUs {
		lease, renter, ok := claims(e, gpu)
		if !ok || lease == py.l.ID || renter == py.l.Renter {
			continue
		}
		// The segment from the latest claim of ours on that GPU.
		from := -1
		for i := len(py.entries) - 2; i >= 0 && len(py.entries)-i <= maxProofEntries; i-- {
			prev, err := attest.OpenEntry(py.entries[i])
			if err != nil {
				return
			}
			if prev.Job != nil && prev.Job.Lease == py.l.ID && prev.Job.Event.Ends() {
				return // our lease ended before: no conflict
			}
			if l, _, ok := claims(prev, gpu); ok && l == py.l.ID {
				from = i
				break
			}
		}
		if from < 0 {
			continue
		}
		proof, err := attest.SealFraudProof(&attest.FraudProof{
			V: attest.RecordsVersion, Reporter: py.a.ID().String(), Kind: attest.FraudDoubleLease,
			Offender: py.l.Provider, GPU: gpu, Entries: py.entries[from:], AtMs: py.a.now().UnixMilli(),
		}, py.a.key)
		if err != nil {
			py.a.log.Debug("double lease suspected but not provable", "gpu", gpu, "err", err)
			continue
		}
		py.stop(fmt.Sprintf("the provider leased GPU %s to another renter during this lease (fraud proof published)", gpu))
		py.a.reportFraud(proof)
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		if err := py.a.p2p.Publish(pctx, p2p.TopicFraud, proof, 0); err != nil {
			py.a.log.Warn("publish fraud proof", "err", err)
		}
		cancel()
		return
	}
}
