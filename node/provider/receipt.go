package provider

import (
	"context"
	"time"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// issueLater issues a lease's receipt in the background.
func (c *cashier) issueLater(l *store.Lease) {
	c.background(func(ctx context.Context) { c.issueReceipt(ctx, l) })
}

// issueReceipt seals the receipt of an ended lease: its outcome over the
// renter's last voucher, so it carries both signatures. A lease its renter
// never paid for has none. The receipt is stored with the lease and
// gossiped, so other renters can weigh this provider by it.
func (c *cashier) issueReceipt(ctx context.Context, l *store.Lease) {
	// One receipt per last voucher: issues for the same lease (at the end,
	// and when a late voucher arrives) run one at a time, and a receipt
	// over the voucher already receipted is not issued again.
	c.receiptMu.Lock()
	defer c.receiptMu.Unlock()
	vraw, err := c.db.Voucher(l.ID)
	if err != nil {
		return
	}
	if cur, err := c.db.GetLease(l.ID); err == nil {
		l = cur
		if _, v, err := attest.OpenReceipt(l.Receipt); err == nil {
			if pv, err := attest.OpenVoucher(vraw); err == nil && v.Seq >= pv.Seq {
				return
			}
		}
	}
	rc := &attest.Receipt{
		V: attest.RecordsVersion, Lease: l.ID, Provider: c.self, Renter: l.Renter,
		Outcome: l.State, Output: l.OutputCID, FirstSeq: l.ChainSeq, LastSeq: max(l.ChainLast, l.ChainSeq),
		AtMs: receiptTime(l, c.now()), Voucher: vraw,
	}
	if l.ExitCode != nil {
		rc.ExitCode = int32(*l.ExitCode)
	}
	if l.WorkStartedMs != 0 && l.WorkFinishedMs > l.WorkStartedMs {
		rc.GPUMs = uint64(len(l.GPUs)) * uint64(l.WorkFinishedMs-l.WorkStartedMs)
	}
	rc.EnergyMJ = c.leaseEnergy(l)
	raw, err := attest.SealReceipt(rc, c.key)
	if err != nil {
		c.log.Warn("seal receipt", "lease", lease.Short(l.ID), "err", err)
		return
	}
	if err := c.db.PutReceipt(attest.RecordID(raw).String(), raw); err != nil {
		c.log.Warn("store receipt", "lease", lease.Short(l.ID), "err", err)
		return
	}
	if _, err := c.book.Update(l.ID, func(l *store.Lease) bool { l.Receipt = raw; return true }); err != nil {
		c.log.Warn("store receipt", "lease", lease.Short(l.ID), "err", err)
	}
	if l.PaidMicro > 0 {
		// Evidence for a firm hold on this renter's next bids.
		c.notePaid(l.Renter)
	}
	// Gossiped on the lease's shard: the renters who may rent from this
	// provider there take it as reputation evidence.
	shard, ok := auction.ModelShard(l.Model)
	if !ok {
		c.log.Debug("receipt not gossiped: the lease names no shard's model", "lease", lease.Short(l.ID), "model", l.Model)
		return
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for _, topic := range shardTopics(c.topics, shard, shard.AttestTopic()) {
		if err := c.p2p.Publish(pctx, topic, raw, 0); err != nil {
			c.log.Debug("publish receipt", "topic", topic, "err", err)
		}
	}
}

// leaseEnergy sums the energy the lease's telemetry windows attribute to it.
func (c *cashier) leaseEnergy(l *store.Lease) uint64 {
	if l.ChainSeq == 0 {
		return 0
	}
	raws, err := c.db.ChainEntries(c.self, l.ChainSeq, max(l.ChainLast, l.ChainSeq))
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

// receiptRecheck is how long after a lease's last change a restart still
// checks that its receipt covers the last voucher (a late voucher may
// have arrived just before a crash); a lease with no receipt is always
// checked.
const receiptRecheck = 24 * time.Hour

func receiptDue(l *store.Lease, now time.Time) bool {
	return len(l.Receipt) == 0 || now.Sub(time.UnixMilli(l.UpdatedAtMs)) < receiptRecheck
}
