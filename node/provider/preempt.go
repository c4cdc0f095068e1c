package provider

import (
	"context"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/lease"
)

// preemption is a bronze lease an award takes GPUs from.
type preemption struct {
	leaseID   string
	renter    string
	noticeSec uint32
}

// sendPreempt notifies a bronze renter and schedules the takeback. The
// notice promised in the bid counts from when the notice is issued, so if
// it leaves later than planned the takeback moves later too (the new lease
// waits for the GPUs) rather than shortening the promise.
func (b *bidder) sendPreempt(p preemption, at time.Time) {
	issued := b.now()
	if earliest := issued.Add(time.Duration(p.noticeSec) * time.Second); at.Before(earliest) {
		at = earliest
	}
	b.preempt(p.leaseID, at)
	notice := &auction.PreemptNotice{
		V: auction.MessagesVersion, Provider: b.self, Lease: p.leaseID, NoticeSec: p.noticeSec,
		IssuedAtMs: issued.UnixMilli(), EffectiveAtMs: at.UnixMilli(), Reason: "GPUs needed for higher-tier work",
	}
	raw, err := auction.SealPreemptNotice(notice, b.key)
	if err != nil {
		b.log.Warn("seal preempt notice", "err", err)
		return
	}
	renter, err := peer.Decode(p.renter)
	if err != nil {
		return
	}
	// The notice is owed even if the award's stream is gone: retry a few
	// times within the notice period, for as long as the node runs.
	b.background(func(rctx context.Context) {
		for attempt := range 3 {
			sctx, cancel := context.WithTimeout(rctx, lease.PreemptLimits.Timeout)
			_, err := b.p2p.Request(sctx, renter, lease.PreemptProto, raw, lease.PreemptLimits)
			cancel()
			if err == nil {
				return
			}
			b.log.Warn("preempt notice not delivered", "lease", lease.Short(p.leaseID), "attempt", attempt+1, "err", err)
			select {
			case <-rctx.Done():
				return
			case <-time.After(time.Second):
			}
		}
	})
}
