package renter

import (
	"bytes"
	"context"
	"errors"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/node/jobproto"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// settling paces the settlement of an ended lease: how soon it asks again
// (doubling from first up to most) and for how long in all. A provider
// killed between a lease's end and its receipt may take minutes to come
// back (a host rebooting); until it has taken the renter's last voucher
// and receipted it, the renter would count as paid what the provider
// cannot claim, so settling outlasts any such restart and gives up only
// on a provider gone for good.
type settling struct {
	first, most time.Duration
	within      time.Duration
}

var defaultSettling = settling{first: 300 * time.Millisecond, most: 30 * time.Second, within: 30 * time.Minute}

// payerStarted registers a lease's payer; the returned channel is closed
// when it returns.
func (pm *payments) payerStarted(id string) chan struct{} {
	pm.mu.Lock()
	defer pm.mu.Unlock()
	ch := make(chan struct{})
	pm.running[id] = ch
	return ch
}

// waitPayer waits (bounded) for a lease's payer to have paid for the last
// window it saw, so the lease is settled over the renter's final voucher.
// It returns the payer's channel (nil when none ran); a payer still
// running after the wait may sign one more voucher, which settling then
// delivers too.
func (pm *payments) waitPayer(ctx context.Context, id string) chan struct{} {
	pm.mu.Lock()
	ch := pm.running[id]
	pm.mu.Unlock()
	if ch == nil {
		return nil
	}
	select {
	case <-ch:
	case <-ctx.Done():
	case <-time.After(30 * time.Second):
	}
	return ch
}

// payerDone forgets a lease's payer once its settling ended.
func (pm *payments) payerDone(id string, ch chan struct{}) {
	pm.mu.Lock()
	if ch != nil && pm.running[id] == ch {
		delete(pm.running, id)
	}
	pm.mu.Unlock()
}

// fetchReceipt settles an ended lease: until the provider's receipt covers
// the renter's latest voucher, it delivers that voucher (again: if the
// provider holds it already it refuses the copy, harmlessly) and asks for
// the receipt, which it checks (both signatures, this lease and parties)
// and stores once it covers the latest voucher. A provider that never
// receipts the latest leaves the lease with its receipt over an older one
// when settling gives up.
func (pm *payments) fetchReceipt(ctx context.Context, l *store.Lease) {
	p, err := peer.Decode(l.Provider)
	if err != nil {
		return
	}
	paying := pm.waitPayer(ctx, l.ID)
	defer pm.payerDone(l.ID, paying)
	pace := pm.settling
	if pace == (settling{}) {
		pace = defaultSettling
	}
	giveUp, wait := pm.now().Add(pace.within), pace.first
	var held, last []byte // the receipt stored so far; the last one the provider served
	if cur, err := pm.db.GetLease(l.ID); err == nil {
		held = cur.Receipt
	}
	for {
		raw, latest := pm.latestVoucher(l.ID)
		if latest != nil {
			pm.deliver(ctx, p, l.ID, raw)
		}
		rc, stop := pm.askReceipt(ctx, p, l)
		if stop {
			return
		}
		if rc != nil {
			last = rc
		}
		// Only a receipt over the latest voucher is stored while settling
		// goes on: the lease's receipt says the lease is settled, and both
		// sides holding an older one with the latest voucher paid is the
		// moment the provider is re-issuing it.
		if last != nil && !bytes.Equal(last, held) && receiptCovers(last, latest) {
			pm.keepReceipt(l.ID, held, last)
			held = last
		}
		covered := receiptCovers(held, latest)
		if covered && (paying == nil || isClosed(paying)) {
			return
		}
		if !pm.now().Before(giveUp) {
			if covered {
				return // a payer that never ended signed nothing more
			}
			if last != nil && !bytes.Equal(last, held) {
				pm.keepReceipt(l.ID, held, last) // the provider's word over what it took
			}
			pm.log.Warn("lease not settled: the provider never receipted the renter's last voucher",
				"lease", lease.Short(l.ID), "provider", l.Provider, "tried_for", pace.within)
			pm.jobs.event(l.RenterJobID(), "unsettled", "lease %s: the provider did not receipt the last voucher within %s; "+
				"its receipt (if any) covers less than this node counts as paid", lease.Short(l.ID), pace.within)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, pace.most)
	}
}

// latestVoucher is the renter's latest voucher of a lease, raw and opened
// (nil when it signed none).
func (pm *payments) latestVoucher(id string) ([]byte, *attest.Voucher) {
	raw, err := pm.db.Voucher(id)
	if err != nil {
		return nil, nil
	}
	v, err := attest.OpenVoucher(raw)
	if err != nil {
		return nil, nil
	}
	return raw, v
}

// deliver sends a voucher to the provider, ignoring its answer: a refusal
// is a copy it holds, and the receipt says what it took.
func (pm *payments) deliver(ctx context.Context, p peer.ID, id string, raw []byte) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, fr, err := pm.call(cctx, p, &jobproto.Request{Op: jobproto.OpVoucher, Lease: id, Voucher: raw}); err == nil {
		_ = fr.Close()
	}
}

// receiptCovers reports whether a stored receipt is over the renter's
// latest voucher (or no voucher was signed).
func receiptCovers(receipt []byte, latest *attest.Voucher) bool {
	if latest == nil {
		return true
	}
	if receipt == nil {
		return false
	}
	_, v, err := attest.OpenReceipt(receipt)
	return err == nil && v.Seq >= latest.Seq
}

// askReceipt asks the provider for the lease's receipt: nil while it has
// none or cannot be reached (a receipt checked: both signatures, this
// lease and parties); stop when settling should end (a bad
// receipt, a lease never paid, or ctx ended).
func (pm *payments) askReceipt(ctx context.Context, p peer.ID, l *store.Lease) (receipt []byte, stop bool) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	h, fr, err := pm.call(cctx, p, &jobproto.Request{Op: jobproto.OpReceipt, Lease: l.ID})
	if err != nil {
		var re *jobproto.RemoteError
		if errors.As(err, &re) && re.Code != jobproto.CodeNotReady {
			return nil, true // never paid: no receipt
		}
		return nil, ctx.Err() != nil
	}
	_ = fr.Close()
	r, v, err := attest.OpenReceipt(h.Receipt)
	if err != nil || r.Lease != l.ID || r.Provider != l.Provider || v.Renter != pm.self.String() {
		pm.log.Warn("bad receipt", "lease", lease.Short(l.ID), "err", err)
		return nil, true
	}
	return h.Receipt, false
}

// keepReceipt stores a lease's receipt, in place of the one held before
// (over an older voucher): one receipt per lease in this node's records.
func (pm *payments) keepReceipt(id string, old, raw []byte) {
	if err := pm.db.PutReceipt(attest.RecordID(raw).String(), raw); err != nil {
		pm.log.Warn("store receipt", "lease", lease.Short(id), "err", err)
		return
	}
	if _, err := pm.leases.Update(id, func(s *store.Lease) bool { s.Receipt = raw; return true }); err != nil {
		pm.log.Warn("store receipt", "lease", lease.Short(id), "err", err)
		return
	}
	if old != nil {
		if err := pm.db.DeleteReceipts([]string{attest.RecordID(old).String()}); err != nil {
			pm.log.Warn("drop replaced receipt", "lease", lease.Short(id), "err", err)
		}
	}
}

// isClosed reports whether ch is closed.
func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// resumeSettling settles again, after a restart, the ended leases of this
// renter whose receipt does not cover its latest voucher (the node
// stopped while settling them), of the last settleResumeWithin.
func (pm *payments) resumeSettling(start func(func(context.Context)) error) {
	leases, err := pm.db.Leases()
	if err != nil {
		pm.log.Warn("resume settling", "err", err)
		return
	}
	for _, l := range leases {
		if l.Side != string(lease.SideRenter) || !lease.State(l.State).Terminal() ||
			pm.now().Sub(time.UnixMilli(l.UpdatedAtMs)) > settleResumeWithin {
			continue
		}
		if _, latest := pm.latestVoucher(l.ID); receiptCovers(l.Receipt, latest) {
			continue
		}
		_ = start(func(ctx context.Context) { pm.fetchReceipt(ctx, l) })
	}
}

// settleResumeWithin is how long after a lease's last change a restarted
// renter still settles it: beyond a day the provider is gone for good.
const settleResumeWithin = 24 * time.Hour
