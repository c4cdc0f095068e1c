package provider

import (
	"context"
	"sync"
	"time"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/p2p"
	"github.com/idlegrid/idlegrid/store"
)

// takeUps follow the renters' awards until they are taken up (the renter
// served the job's spec) and the awards they abandoned, here and as other
// providers noted them, so that what the bidder bids and commits to a
// renter follows auction.TakeUpLimits: a renter that awards and never
// takes up holds GPUs for auction.TakeUpPatience at one award at a time,
// and after a few abandons (here or at other providers) gets nothing for
// an hour.
type takeUps struct {
	lim auction.TakeUpLimits
	now func() time.Time

	mu sync.Mutex
	// pending: lease ID -> the award not taken up yet.
	pending map[string]pendingAward
	// abandoned: renter -> when it abandoned awards here.
	abandoned map[string][]time.Time
	// lastAbandon is when a renter last abandoned an award here.
	lastAbandon time.Time
	notes       *abandonNotes
}

type pendingAward struct {
	renter string
	gpus   int
	fresh  bool // counted against the share of renters without paid history
}

// takeUpLimits are the configured limits, or the defaults.
func takeUpLimits(lim *auction.TakeUpLimits) auction.TakeUpLimits {
	if lim == nil {
		return auction.DefaultTakeUpLimits()
	}
	return *lim
}

func newTakeUps(lim auction.TakeUpLimits, now func() time.Time) *takeUps {
	return &takeUps{lim: lim, now: now, pending: map[string]pendingAward{}, abandoned: map[string][]time.Time{}, notes: newAbandonNotes()}
}

// standingLocked is what this provider knows of renter at now. Callers
// hold t.mu.
func (t *takeUps) standingLocked(renter string, paid bool, now time.Time) auction.RenterStanding {
	s := auction.RenterStanding{Paid: paid, Noted: t.notes.noted(renter, now)}
	for _, p := range t.pending {
		if p.renter == renter {
			s.Unconfirmed++
			s.UnconfirmedGPUs += p.gpus
		}
	}
	kept := t.abandoned[renter][:0]
	for _, at := range t.abandoned[renter] {
		if now.Sub(at) <= auction.AbandonNoteFor {
			kept = append(kept, at)
		}
	}
	if len(kept) == 0 {
		delete(t.abandoned, renter)
	} else {
		t.abandoned[renter] = kept
	}
	s.Abandoned = len(kept)
	return s
}

// freshLoadLocked is what awards of renters other than renter, without
// paid history, hold not taken up. Callers hold t.mu.
func (t *takeUps) freshLoadLocked(renter string, total int) auction.FreshLoad {
	f := auction.FreshLoad{TotalGPUs: total, Abandoned: !t.lastAbandon.IsZero() && t.now().Sub(t.lastAbandon) <= auction.AbandonAlertFor}
	for _, p := range t.pending {
		if p.fresh && p.renter != renter {
			f.Awards++
			f.GPUs += p.gpus
		}
	}
	return f
}

// admit says why the provider does not take an award of gpus GPUs from
// renter (paid: it paid here before) out of total GPUs, or "".
func (t *takeUps) admit(renter string, gpus, total int, paid bool) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.standingLocked(renter, paid, t.now())
	return t.lim.AdmitUnconfirmed(s, gpus, t.freshLoadLocked(renter, total))
}

// allowance is how many GPUs the provider may bid to renter now
// (auction.Unbounded: no bound), and why none when 0.
func (t *takeUps) allowance(renter string, total int, paid bool) (int, string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.standingLocked(renter, paid, t.now())
	return t.lim.Allowance(s, t.freshLoadLocked(renter, total))
}

// awarded records a countersigned award of gpus GPUs from renter (admitted
// first) as one not taken up yet.
func (t *takeUps) awarded(leaseID, renter string, gpus int, paid bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.standingLocked(renter, paid, t.now())
	t.pending[leaseID] = pendingAward{renter: renter, gpus: gpus, fresh: !paid || s.Suspect()}
}

// tookUp: the renter served the lease's spec; its award no longer counts
// against the renter. A lease that ended does the same (done).
func (t *takeUps) tookUp(leaseID string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.pending, leaseID)
}

// abandon records that renter abandoned the award of leaseID at now.
func (t *takeUps) abandon(leaseID, renter string, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.pending, leaseID)
	t.lastAbandon = at
	if len(t.abandoned) >= maxNotedRenters {
		t.abandoned = map[string][]time.Time{} // a flood of fresh keys: start over, nothing is lost but an hour of memory
	}
	t.abandoned[renter] = append(t.abandoned[renter], at)
}

// noteAbandoned seals and gossips the note of a lease the renter never
// took up (alongside award summaries and receipts on idlegrid/attest/1),
// so other providers tighten what they commit to the renter too.
func (b *bidder) noteAbandoned(l *store.Lease) {
	now := b.now()
	b.takeUps.abandon(l.ID, l.Renter, now)
	n, err := auction.NoteAbandoned(l.Award, now)
	if err != nil {
		b.log.Warn("note abandoned award", "lease", lease.Short(l.ID), "err", err)
		return
	}
	raw, err := auction.SealAbandonNote(n, b.key)
	if err != nil {
		b.log.Warn("seal abandon note", "lease", lease.Short(l.ID), "err", err)
		return
	}
	b.log.Info("award abandoned: the renter never sent the job's spec", "lease", lease.Short(l.ID), "renter", lease.Short(l.Renter))
	b.background(func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := b.p2p.Publish(ctx, p2p.TopicAttest, raw, 0); err != nil {
			b.log.Debug("publish abandon note", "err", err)
		}
	})
}

// onAbandonNote takes another provider's verified note (the trust room
// checked its signatures and award on the topic's validator).
func (t *takeUps) onAbandonNote(n *auction.AbandonNote) {
	now := t.now()
	if n.Expired(now, time.Minute) {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.notes.add(n.Provider, n.Renter, time.UnixMilli(n.AtMs), now)
}
