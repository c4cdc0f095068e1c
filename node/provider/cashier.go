package provider

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/failpoint"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/p2p"
	"github.com/idlegrid/idlegrid/store"
)

// errUnpaid is the cause of a lease stopped because its renter's vouchers
// stopped coming.
var errUnpaid = errors.New("the renter stopped paying")

// cashier takes the renters' vouchers for this provider's leases, watches
// that running work stays paid, and issues each ended lease's receipt:
// its outcome over the renter's last voucher, signed by both.
type cashier struct {
	cashierDeps
	self string
	// receiptMu serialises receipt issuing (receipt.go).
	receiptMu sync.Mutex
}

// cashierDeps are the cashier's collaborators.
type cashierDeps struct {
	log  *slog.Logger
	now  func() time.Time
	key  crypto.PrivKey
	p2p  *p2p.Node
	db   *store.DB
	book *lease.Book
	// notePaid records a renter's paid, receipted lease: evidence for
	// firm holds on its next bids.
	notePaid func(renter string)
	// background runs work after the call that asked for it (a receipt
	// for a late voucher).
	background func(fn func(ctx context.Context))
	// topics are where a receipt for a shard's attestation topic goes
	// (lotCounts.topics); nil: that topic only.
	topics func(s auction.Shard, topic string) []string
}

func newCashier(d cashierDeps) *cashier { return &cashier{cashierDeps: d, self: d.p2p.ID().String()} }

// acceptVoucher records a renter's voucher for a lease: signed by the
// lease's renter, for this lease, and superseding the stored one (seq and
// amount never go back).
func (c *cashier) acceptVoucher(from peer.ID, l *store.Lease, raw []byte) (*store.Lease, error) {
	v, err := attest.OpenVoucher(raw)
	if err != nil {
		return nil, err
	}
	if v.Lease != l.ID || v.Renter != l.Renter || v.Renter != from.String() || v.Provider != c.self {
		return nil, fmt.Errorf("voucher for lease %s between %s and %s does not match this lease", v.Lease, v.Renter, v.Provider)
	}
	if prev, err := c.db.Voucher(l.ID); err == nil {
		pv, err := attest.OpenVoucher(prev)
		if err == nil {
			if err := pv.Supersedes(v); err != nil {
				return nil, err
			}
		}
	}
	if err := c.db.PutVoucher(l.ID, raw); err != nil {
		return nil, err
	}
	cur, err := c.book.Update(l.ID, func(l *store.Lease) bool {
		l.PaidMicro, l.PaidUntilMs = v.AmountMicro, v.CoveredUntilMs
		return true
	})
	failpoint.Hit(failpoint.ProviderVoucherStored)
	if err == nil && lease.State(cur.State).Terminal() {
		// The renter paid for the last window after the work ended: the
		// receipt carries that final voucher.
		c.issueLater(cur)
	}
	return cur, err
}

// unpaid is the stop-unpaid-work rule, by the terms t both parties signed
// (never this node's config): a running lease whose vouchers cover less
// than the time worked minus the terms' allowance (one voucher interval or
// telemetry window, whichever is longer, and the grace) is unpaid; late is
// how far past the covered time the clock is. The first Prepay intervals
// count as paid.
func (c *cashier) unpaid(l *store.Lease, t auction.LeaseTerms) (late time.Duration, unpaid bool) {
	paid := max(l.PaidUntilMs, l.WorkStartedMs+t.Prepaid().Milliseconds())
	late = c.now().Sub(time.UnixMilli(paid))
	return late, late > t.Allowance()
}

// payWatch stops a running lease, through stop, once its renter stopped
// paying by the lease's terms (unpaid).
func (c *cashier) payWatch(ctx context.Context, id string, stop func()) {
	l, err := c.db.GetLease(id)
	if err != nil {
		return
	}
	terms := lease.Agreed(l)
	t := time.NewTicker(min(time.Second, terms.Allowance()/4))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		l, err := c.db.GetLease(id)
		if err != nil || lease.State(l.State).Terminal() || l.WorkStartedMs == 0 {
			continue
		}
		if late, unpaid := c.unpaid(l, terms); unpaid {
			c.log.Warn("stopping unpaid work", "lease", lease.Short(id), "paid", paidWords(l), "late", late, "allowance", terms.Allowance())
			stop()
			return
		}
	}
}

// paidWords says how far a lease is paid, in words: "never paid" rather
// than the zero time.
func paidWords(l *store.Lease) string {
	if l.PaidUntilMs == 0 {
		return "never paid"
	}
	return "until " + time.UnixMilli(l.PaidUntilMs).UTC().Format(time.RFC3339Nano)
}
