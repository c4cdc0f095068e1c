package renter

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/time/rate"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// Waiting for a plan. A job whose auction found no plan (no bid, or none
// the renter could take) is not unfilled at once: GPUs busy now free up,
// and providers join. The renter auctions it again until its wait ends:
// market.max_wait after its submission, or the spec's start_by or
// max_wait when it sets one. A job that waited in vain ends unfilled with the last
// auction's reason and how long it waited. Work auctioned again after a
// preemption or a lost provider waits market.max_wait from then, at least
// ReauctionMinWait; a replicated service's slot keeps trying as long as
// the service runs.
//
// A waiting job costs providers an RFQ per try, so tries are spaced out
// (waitBackoff) and all waiting jobs of this renter share one pace
// (waitPace), under the RFQ rate any provider allows a renter with no
// history (trust's rfqFreshPerSec). What a waiting job stores is bounded
// too: each try's RFQ and window are shown to watchers live, not stored,
// and only the first maxWaitEvents changes of reason become job events.

const (
	// waitMinBackoff and waitMaxBackoff bound the time between tries; in
	// between, a job waits a quarter of how long it has waited so far, so
	// a job that just missed gets its next chance soon and one that has
	// waited an hour asks once a minute.
	waitMinBackoff = 2 * time.Second
	waitMaxBackoff = time.Minute
	// waitPacePerSec and waitPaceBurst are the RFQs per second all of
	// this renter's waiting jobs may publish together.
	waitPacePerSec = 1
	waitPaceBurst  = 10
	// ReauctionMinWait is how long re-auctioned work waits for a plan
	// even with market.max_wait 0: it was running a moment ago.
	ReauctionMinWait = 90 * time.Second
	// maxWaitEvents bounds the `waiting` events one job stores.
	maxWaitEvents = 20
	// maxJobRFQs bounds the RFQ IDs a job keeps (the latest).
	maxJobRFQs = 32
)

func newWaitPace() *rate.Limiter { return rate.NewLimiter(waitPacePerSec, waitPaceBurst) }

// waitState is one job's wait for a plan, across its tries.
type waitState struct {
	since    time.Time // the job's submission
	deadline time.Time // when it ends unfilled; zero: at the first auction
	paced    bool      // its caller spaces the tries and ends the wait
	why      string    // what set the deadline, in the spec's or config's words
	startBy  bool      // the deadline is the spec's start_by
	tries    int       // auctions run again after the first
	events   int       // `waiting` events stored
	reason   string    // the last reason stored
}

// newPacedWait is a wait whose caller keeps it across tries, spaces
// them (waitBackoff) and decides when it is over, why saying until when:
// a replicated service's slot (as long as the service runs) or a lost
// replica's replacement. It never ends the job: one try per
// auctioneer.run call.
func newPacedWait(now time.Time, why string) *waitState {
	return &waitState{since: now, paced: true, why: why}
}

// waitFor is how long the job may wait for a plan. Its first auction
// (round 0) waits from the job's submission until its start_by (an RFC
// 3339 time, or a duration from submission) when the spec sets one, else
// for its max_wait, else for market.max_wait; a re-auction waits from now
// for market.max_wait, at least ReauctionMinWait.
func (au *auctioneer) waitFor(jobID string, spec *auction.JobSpec, round int) *waitState {
	w := &waitState{since: au.now()}
	switch {
	case round > 0:
		d := max(au.maxWait, ReauctionMinWait)
		w.deadline, w.why = w.since.Add(d), "a re-auction waits "+d.String()
		return w
	}
	if j, err := au.jobs.db.GetJob(jobID); err == nil && j.CreatedAtMs != 0 {
		w.since = time.UnixMilli(j.CreatedAtMs)
	}
	at, d, hasStartBy := startBy(spec)
	maxWait, hasMaxWait := spec.MaxWaitFor()
	switch {
	case hasStartBy && !at.IsZero():
		w.deadline, w.why, w.startBy = at, "its start_by "+at.UTC().Format(time.RFC3339), true
	case hasStartBy:
		w.deadline, w.why, w.startBy = w.since.Add(d), "its start_by "+d.String(), true
	case hasMaxWait && maxWait > 0:
		w.deadline, w.why = w.since.Add(maxWait), "its max_wait "+maxWait.String()
	case !hasMaxWait && au.maxWait > 0:
		w.deadline, w.why = w.since.Add(au.maxWait), "market.max_wait "+au.maxWait.String()
	}
	return w
}

// startBy reads the spec's start_by: an absolute time, or a duration from
// submission; ok is false when the spec sets none (validation has checked
// its form already).
func startBy(spec *auction.JobSpec) (at time.Time, d time.Duration, ok bool) {
	if spec.StartBy == "" {
		return time.Time{}, 0, false
	}
	if t, err := time.Parse(time.RFC3339, spec.StartBy); err == nil {
		return t, 0, true
	}
	d, err := time.ParseDuration(spec.StartBy)
	return time.Time{}, d, err == nil
}

// waitBackoff is the time until the next try of a job that has waited
// waited so far.
func waitBackoff(waited time.Duration) time.Duration {
	return min(max(waited/4, waitMinBackoff), waitMaxBackoff)
}

// wait decides what becomes of a first auction that found no plan: the
// job ends unfilled when its next try would not come before the end of
// its wait (a provider could not start it in time), or waits for that try
// and reports that it is to be auctioned again.
func (au *auctioneer) wait(ctx context.Context, jobID, reason string, w *waitState) (again bool) {
	now := au.now()
	var next time.Duration
	if w != nil {
		next = waitBackoff(now.Sub(w.since))
	}
	if w == nil || !w.paced && !now.Add(next).Before(w.deadline) {
		if w != nil && w.tries > 0 {
			reason = fmt.Sprintf("%s; no plan in %d auctions over %s (%s)", reason, w.tries+1, now.Sub(w.since).Round(time.Second), w.why)
		}
		au.jobs.set(jobID, lease.JobUnfilled, "unfilled", "%s", reason)
		return false
	}
	until := w.why
	if !w.paced {
		until = fmt.Sprintf("until %s (%s)", w.deadline.UTC().Format(time.RFC3339), w.why)
	}
	ev := store.JobEvent{Kind: "waiting", Message: fmt.Sprintf("no plan yet (%s); auctioning again in %s, %s",
		reason, next.Round(time.Second), until)}
	if reason != w.reason && w.events < maxWaitEvents {
		w.events, w.reason = w.events+1, reason
		au.jobs.note(jobID, ev, nil)
	} else {
		au.jobs.notify(jobID, ev)
	}
	if w.paced {
		return true // the caller spaces the tries (auctioneer.run)
	}
	if !sleepCtx(ctx, next) {
		return false
	}
	if err := au.waitPace.Wait(ctx); err != nil {
		return false
	}
	w.tries++
	return true
}

// clampStartBy keeps a waiting job's RFQ within its start_by: a relative
// start_by counts from the job's submission, not from each try.
func clampStartBy(rfq *auction.RFQ, w *waitState) {
	if w != nil && w.startBy && rfq.StartByMs > w.deadline.UnixMilli() {
		rfq.StartByMs = max(w.deadline.UnixMilli(), rfq.IssuedAtMs)
	}
}

// progress records an auction's step: stored as a job event on the
// job's first auction, shown to watchers only on a waiting job's tries;
// fn runs on the stored job either way.
func (au *auctioneer) progress(jobID string, w *waitState, ev store.JobEvent, fn func(j *store.Job)) {
	if w == nil || w.tries == 0 {
		au.jobs.note(jobID, ev, fn)
		return
	}
	if fn != nil {
		au.jobs.note(jobID, store.JobEvent{}, fn)
	}
	au.jobs.notify(jobID, ev)
}

// addRFQ keeps the job's latest RFQ IDs.
func addRFQ(j *store.Job, rfqID string) {
	j.RFQs = append(j.RFQs, rfqID)
	if n := len(j.RFQs); n > maxJobRFQs {
		j.RFQs = append([]string(nil), j.RFQs[n-maxJobRFQs:]...)
	}
}

// sleepCtx waits d, false when ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
