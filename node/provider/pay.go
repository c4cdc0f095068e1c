package provider

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/node/failpoint"
	"github.com/idlegrid/idlegrid/node/jobproto"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/p2p"
	"github.com/idlegrid/idlegrid/store"
)

// errUnpaid is the cause of a lease stopped because its renter's vouchers
// stopped coming.
var errUnpaid = errors.New("the renter stopped paying")

// serveAttest streams the provider's chain to the lease's renter: the
// fingerprint in force, then every entry from the lease's start (or
// req.After) on, contiguous so the renter can check continuity; with
// Follow, new entries as they are appended until the lease ends.
func (r *leaseRunner) serveAttest(ctx context.Context, l *store.Lease, req *jobproto.Request, send func([]byte) error) error {
	a := r.p.attest
	for l.ChainSeq == 0 && !lease.State(l.State).Terminal() && req.Follow {
		var err error
		if l, err = r.book.Wait(ctx, l.ID, l.Version); err != nil || ctx.Err() != nil {
			return ctx.Err()
		}
	}
	if err := lease.SendHeader(send, &jobproto.Header{}); err != nil {
		return err
	}
	if l.ChainSeq == 0 {
		return nil // never started: nothing attests it
	}
	if fp := a.currentFingerprint(); fp != nil {
		if err := send(fp); err != nil {
			return err
		}
	}
	next := max(req.After, l.ChainSeq)
	self := r.p.ID().String()
	for {
		changed := a.changed()
		wctx, stopWait := context.WithCancel(ctx)
		leaseChanged := make(chan struct{})
		go func(id string, version uint64) {
			defer close(leaseChanged)
			_, _ = r.book.Wait(wctx, id, version)
		}(l.ID, l.Version)
		cur, err := r.p.db.GetLease(l.ID)
		if err != nil {
			stopWait()
			return err
		}
		l = cur
		last := uint64(math.MaxUint64)
		if lease.State(l.State).Terminal() && l.ChainLast != 0 {
			last = l.ChainLast
		}
		if h := a.chain.Head(); h != nil && h.Seq >= next {
			raws, err := r.p.db.ChainEntries(self, next, min(h.Seq, last))
			if err != nil {
				stopWait()
				return err
			}
			for _, raw := range raws {
				if err := send(raw); err != nil {
					stopWait()
					return err
				}
			}
			next += uint64(len(raws))
		}
		if !req.Follow || (lease.State(l.State).Terminal() && next > last) {
			stopWait()
			return nil
		}
		select {
		case <-ctx.Done():
		case <-changed:
		case <-leaseChanged:
		}
		stopWait()
		<-leaseChanged
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// acceptVoucher records a renter's voucher for a lease: signed by the
// lease's renter, for this lease, and superseding the stored one (seq and
// amount never go back).
func (r *leaseRunner) acceptVoucher(from peer.ID, l *store.Lease, raw []byte) (*store.Lease, error) {
	v, err := attest.OpenVoucher(raw)
	if err != nil {
		return nil, err
	}
	if v.Lease != l.ID || v.Renter != l.Renter || v.Renter != from.String() || v.Provider != r.p.ID().String() {
		return nil, fmt.Errorf("voucher for lease %s between %s and %s does not match this lease", v.Lease, v.Renter, v.Provider)
	}
	if prev, err := r.p.db.Voucher(l.ID); err == nil {
		pv, err := attest.OpenVoucher(prev)
		if err == nil {
			if err := pv.Supersedes(v); err != nil {
				return nil, err
			}
		}
	}
	if err := r.p.db.PutVoucher(l.ID, raw); err != nil {
		return nil, err
	}
	cur, err := r.book.Update(l.ID, func(l *store.Lease) bool {
		l.PaidMicro, l.PaidUntilMs = v.AmountMicro, v.CoveredUntilMs
		return true
	})
	failpoint.Hit(failpoint.ProviderVoucherStored)
	if err == nil && lease.State(cur.State).Terminal() {
		// The renter paid for the last window after the work ended: the
		// receipt carries that final voucher.
		r.background(func(ctx context.Context) { r.issueReceipt(ctx, cur) })
	}
	return cur, err
}

// unpaid is the stop-unpaid-work rule: a running lease whose vouchers
// cover less than the time worked minus one voucher interval (or telemetry
// window, whichever is longer) and the grace is unpaid; late is how far
// past the covered time the clock is. The first PrepayIntervals intervals
// count as paid.
func (r *leaseRunner) unpaid(l *store.Lease) (late time.Duration, unpaid bool) {
	c := r.p.cfg.Attest
	allow := max(c.VoucherInterval, c.Window) + c.VoucherGrace
	paid := max(l.PaidUntilMs, l.WorkStartedMs+int64(c.PrepayIntervals)*c.VoucherInterval.Milliseconds())
	late = r.now().Sub(time.UnixMilli(paid))
	return late, late > allow
}

// payWatch stops a running lease whose renter stopped paying: when the
// latest voucher covers less than now - (interval + grace). Prepaid
// intervals count from the work's start.
func (r *leaseRunner) payWatch(ctx context.Context, id string) {
	c := r.p.cfg.Attest
	allow := max(c.VoucherInterval, c.Window) + c.VoucherGrace
	t := time.NewTicker(min(time.Second, allow/4))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		l, err := r.p.db.GetLease(id)
		if err != nil || lease.State(l.State).Terminal() || l.WorkStartedMs == 0 {
			continue
		}
		if late, unpaid := r.unpaid(l); unpaid {
			r.log.Warn("stopping unpaid work", "lease", lease.Short(id), "paid_until", time.UnixMilli(l.PaidUntilMs), "late", late)
			r.stop(id, errUnpaid, r.now().Add(r.cfg.StopGrace))
			return
		}
	}
}

// issueReceipt seals the receipt of an ended lease: its outcome over the
// renter's last voucher, so it carries both signatures. A lease its renter
// never paid for has none. The receipt is stored with the lease and
// gossiped, so other renters can weigh this provider by it.
func (r *leaseRunner) issueReceipt(ctx context.Context, l *store.Lease) {
	// One receipt per last voucher: issues for the same lease (at the end,
	// and when a late voucher arrives) run one at a time, and a receipt
	// over the voucher already receipted is not issued again.
	r.receiptMu.Lock()
	defer r.receiptMu.Unlock()
	vraw, err := r.p.db.Voucher(l.ID)
	if err != nil {
		return
	}
	if cur, err := r.p.db.GetLease(l.ID); err == nil {
		l = cur
		if _, v, err := attest.OpenReceipt(l.Receipt); err == nil {
			if pv, err := attest.OpenVoucher(vraw); err == nil && v.Seq >= pv.Seq {
				return
			}
		}
	}
	rc := &attest.Receipt{
		V: attest.RecordsVersion, Lease: l.ID, Provider: r.p.ID().String(), Renter: l.Renter,
		Outcome: l.State, Output: l.OutputCID, FirstSeq: l.ChainSeq, LastSeq: max(l.ChainLast, l.ChainSeq),
		AtMs: receiptTime(l, r.now()), Voucher: vraw,
	}
	if l.ExitCode != nil {
		rc.ExitCode = int32(*l.ExitCode)
	}
	if l.WorkStartedMs != 0 && l.WorkFinishedMs > l.WorkStartedMs {
		rc.GPUMs = uint64(len(l.GPUs)) * uint64(l.WorkFinishedMs-l.WorkStartedMs)
	}
	rc.EnergyMJ = r.leaseEnergy(l)
	raw, err := attest.SealReceipt(rc, r.p.key)
	if err != nil {
		r.log.Warn("seal receipt", "lease", lease.Short(l.ID), "err", err)
		return
	}
	if err := r.p.db.PutReceipt(attest.RecordID(raw).String(), raw); err != nil {
		r.log.Warn("store receipt", "lease", lease.Short(l.ID), "err", err)
		return
	}
	if _, err := r.book.Update(l.ID, func(l *store.Lease) bool { l.Receipt = raw; return true }); err != nil {
		r.log.Warn("store receipt", "lease", lease.Short(l.ID), "err", err)
	}
	if l.PaidMicro > 0 {
		// Evidence for a firm hold on this renter's next bids.
		r.p.firm.notePaid(l.Renter)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := r.p.p2p.Publish(pctx, p2p.TopicAttest, raw, 0); err != nil {
		r.log.Debug("publish receipt", "err", err)
	}
}

// leaseEnergy sums the energy the lease's telemetry windows attribute to it.
func (r *leaseRunner) leaseEnergy(l *store.Lease) uint64 {
	if l.ChainSeq == 0 {
		return 0
	}
	raws, err := r.p.db.ChainEntries(r.p.ID().String(), l.ChainSeq, max(l.ChainLast, l.ChainSeq))
	if err != nil {
		return 0
	}
	var total uint64
	for _, raw := range raws {
		e, err := attest.OpenEntry(raw)
		if err != nil || e.Telemetry == nil {
			continue
		}
		for _, g := range e.Telemetry.GPUs {
			if g.Lease == l.ID {
				total += g.EnergyMJ
			}
		}
	}
	return total
}

// receiptTime dates a receipt by the lease, not by when it was sealed, so
// sealing it again over the same voucher gives the same bytes (Ed25519
// signatures are deterministic) and both parties hold one receipt.
func receiptTime(l *store.Lease, now time.Time) int64 {
	switch {
	case l.WorkFinishedMs != 0:
		return l.WorkFinishedMs
	case l.PaidUntilMs != 0:
		return l.PaidUntilMs
	}
	return now.UnixMilli()
}
