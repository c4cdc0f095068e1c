package renter

import (
	"context"
	"errors"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/node/jobproto"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

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
func (pm *payments) waitPayer(ctx context.Context, id string) {
	pm.mu.Lock()
	ch := pm.running[id]
	pm.mu.Unlock()
	if ch == nil {
		return
	}
	select {
	case <-ch:
	case <-ctx.Done():
	case <-time.After(30 * time.Second):
	}
	pm.mu.Lock()
	if pm.running[id] == ch {
		delete(pm.running, id)
	}
	pm.mu.Unlock()
}

// fetchReceipt settles an ended lease: it delivers the renter's latest
// voucher (again: if the provider holds it already it refuses the copy,
// harmlessly), then asks for the receipt, checks it (both signatures, this
// lease and parties, over the renter's latest voucher) and stores it.
func (pm *payments) fetchReceipt(ctx context.Context, l *store.Lease) {
	p, err := peer.Decode(l.Provider)
	if err != nil {
		return
	}
	pm.waitPayer(ctx, l.ID)
	var latest *attest.Voucher
	raw, err := pm.db.Voucher(l.ID)
	if err == nil {
		latest, _ = attest.OpenVoucher(raw)
	}
	deliver := func() {
		if latest == nil {
			return
		}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		if _, fr, err := pm.call(cctx, p, &jobproto.Request{Op: jobproto.OpVoucher, Lease: l.ID, Voucher: raw}); err == nil {
			_ = fr.Close()
		}
		cancel()
	}
	deliver()
	for attempt := range receiptAttempts {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		h, fr, err := pm.call(cctx, p, &jobproto.Request{Op: jobproto.OpReceipt, Lease: l.ID})
		cancel()
		if err == nil {
			_ = fr.Close()
			rc, v, err := attest.OpenReceipt(h.Receipt)
			if err != nil || rc.Lease != l.ID || rc.Provider != l.Provider || v.Renter != pm.self.String() {
				pm.log.Warn("bad receipt", "lease", lease.Short(l.ID), "err", err)
				return
			}
			// The provider re-issues the receipt when the last voucher
			// reaches it; wait for the one over ours.
			if latest == nil || v.Seq >= latest.Seq || attempt == receiptAttempts-1 {
				if err := pm.db.PutReceipt(attest.RecordID(h.Receipt).String(), h.Receipt); err != nil {
					pm.log.Warn("store receipt", "lease", lease.Short(l.ID), "err", err)
					return
				}
				if _, err := pm.leases.Update(l.ID, func(s *store.Lease) bool { s.Receipt = h.Receipt; return true }); err != nil {
					pm.log.Warn("store receipt", "lease", lease.Short(l.ID), "err", err)
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
		case <-time.After(min(time.Duration(attempt+1)*300*time.Millisecond, 5*time.Second)):
		}
		// A receipt older than our voucher, or none: the voucher did not
		// reach the provider (it was restarting): send it again.
		deliver()
	}
}

// receiptAttempts bounds the receipt asks of fetchReceipt, about a minute
// of them: long enough for a provider killed between a lease's end and
// its receipt to restart and take the renter's last voucher.
const receiptAttempts = 20
