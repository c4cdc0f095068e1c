package provider

import (
	"context"
	"math"

	"github.com/idlegrid/idlegrid/node/jobproto"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// serveLease streams the provider's chain to the lease's renter: the
// fingerprint in force, then every entry from the lease's start (or
// req.After) on, contiguous so the renter can check continuity; with
// Follow, new entries as they are appended until the lease ends.
func (a *attestor) serveLease(ctx context.Context, l *store.Lease, req *jobproto.Request, send func([]byte) error) error {
	for l.ChainSeq == 0 && !lease.State(l.State).Terminal() && req.Follow {
		var err error
		if l, err = a.book.Wait(ctx, l.ID, l.Version); err != nil || ctx.Err() != nil {
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
	self := a.self.String()
	for {
		changed := a.changed()
		wctx, stopWait := context.WithCancel(ctx)
		leaseChanged := make(chan struct{})
		go func(id string, version uint64) {
			defer close(leaseChanged)
			_, _ = a.book.Wait(wctx, id, version)
		}(l.ID, l.Version)
		cur, err := a.db.GetLease(l.ID)
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
			raws, err := a.db.ChainEntries(self, next, min(h.Seq, last))
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
