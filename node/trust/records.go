package trust

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/p2p"
)

// Record checks: a provider's digest is backed once its capacity record,
// fetched from the DHT, matches it (auction.DigestMatchesRecord). A few
// workers fetch records from a bounded queue, so a flood of held digests
// costs a bounded number of lookups; a digest that waits in a full queue
// stays held (moving nothing) until its provider's next digest.
const (
	recordCheckWorkers = 4
	recordCheckQueue   = 4096
	recordCheckTimeout = 15 * time.Second
	// A provider whose own digest came before its record was found is
	// tried again after recordRetryAfter, then twice that: recordTries in
	// all, over about 10 s, as its record may have been put a moment ago.
	// A check this node cannot run yet (no DHT peers: it has just started)
	// is no try, for any digest: it waits for the routing table.
	recordRetryAfter = 3 * time.Second
	recordTries      = 3
	passedOnTries    = 2
	// A backed provider's record is fetched again recheckBefore the
	// matched one expires (records live 30 min and are put again every
	// 10), and at most every recheckEvery when a newer digest claims a
	// shard the matched record does not serve (servesAll).
	recheckBefore = 5 * time.Minute
	recheckEvery  = time.Minute
)

// AbuseDigestUnbacked is charged to the peer that introduced a digest
// whose provider's record did not back it (a sync source, or the peer
// that gossiped it first: honest relays pass on only digests they
// checked). unbackedPoints is its cost: 25 digests that do not check out
// cost a ban (BanPoints 200), well within the newPeersPerSource a source
// may put into the book unchecked. A provider that gossips its own digest is not charged (its record
// may not have spread yet); a peer that passes on a stranger's is.
const AbuseDigestUnbacked p2p.AbuseReason = "digest_unbacked"

const unbackedPoints = 8

// errLookupTimedOut marks a record check whose DHT lookup ran out of time:
// it shows nothing about the peer that passed the digest on (on a
// saturated machine honest lookups time out), so nobody is charged; the
// digest is still dropped for unbackedFor, and the source's budget token
// is not given back, which bounds what a source gains from lookups made
// slow on purpose.
var errLookupTimedOut = errors.New("the record lookup timed out")

// queueCheck queues a record check of p unless one is queued or running.
// It reports whether p is being checked.
func (t *Trust) queueCheck(p string) bool {
	queued := false
	t.ev.update(p, t.now(), func(ev *peerEvidence) {
		if ev.checking {
			queued = true
			return
		}
		select {
		case t.checks <- p:
			ev.checking, queued = true, true
		default:
		}
	})
	return queued
}

// runRecordChecks runs the check workers until ctx ends.
func (t *Trust) runRecordChecks(ctx context.Context) {
	var wg sync.WaitGroup
	for range recordCheckWorkers {
		wg.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case p := <-t.checks:
					t.checkRecord(ctx, p)
				}
			}
		})
	}
	wg.Wait()
}

// checkRecord fetches p's record and judges the digest held for it.
func (t *Trust) checkRecord(ctx context.Context, p string) {
	d, _, ok := t.digests.Get(p)
	id, err := peer.Decode(p)
	if !ok || err != nil {
		t.checkDone(p, nil, nil, nil) // the digest expired or was evicted meanwhile
		return
	}
	if rec, via := t.servedRecord(ctx, id, d); rec != nil {
		t.recordChecks.WithLabelValues(via).Inc()
		t.checkDone(p, d, rec, nil)
		return
	}
	cctx, cancel := context.WithTimeout(ctx, t.checkTimeout)
	rec, err := t.fetchRecord(cctx, id)
	if err != nil && cctx.Err() != nil {
		err = fmt.Errorf("%w: %w", errLookupTimedOut, err)
	}
	cancel()
	if ctx.Err() != nil {
		t.ev.update(p, t.now(), func(ev *peerEvidence) { ev.checking = false })
		return
	}
	if errors.Is(err, errNoRoutes) {
		t.recordChecks.WithLabelValues("no_routes").Inc()
		t.ev.update(p, t.now(), func(ev *peerEvidence) { ev.checking = false })
		time.AfterFunc(recordRetryAfter, func() { t.queueCheck(p) })
		return
	}
	if err == nil {
		err = auction.DigestMatchesRecord(d, rec, t.now())
	}
	switch {
	case err == nil:
		t.recordChecks.WithLabelValues("dht").Inc()
	case errors.Is(err, errLookupTimedOut):
		t.recordChecks.WithLabelValues("timed_out").Inc()
	default:
		t.recordChecks.WithLabelValues("unbacked").Inc()
	}
	if err != nil && t.retryCheck(p) {
		return
	}
	t.checkDone(p, d, rec, err)
}

// servedRecord is a record backing d found without a DHT lookup: one
// this node took within recordCheckTimeout (a sync page's records are
// taken just before its digests), else one asked of the peer that passed d
// on and of the provider itself (records_serve.go). nil: look it up.
func (t *Trust) servedRecord(ctx context.Context, id peer.ID, d *auction.Digest) (rec *auction.Capacity, via string) {
	now := t.now()
	if c, ok := t.market.cached(id, now); ok && now.Sub(c.fetched) < recordCheckTimeout &&
		auction.DigestMatchesRecord(d, c.rec, now) == nil {
		return c.rec, "taken"
	}
	srcs := []peer.ID{id}
	ev := t.ev.of(d.Peer)
	if from := cmp.Or(ev.blame, ev.via); from != "" && from != id {
		srcs = []peer.ID{from, id}
	}
	for _, src := range srcs {
		actx, cancel := context.WithTimeout(ctx, recordsAskTimeout)
		got, err := t.askRecords(actx, src, []peer.ID{id})
		cancel()
		rec := got[id]
		outcome := "backed"
		switch {
		case errors.Is(err, errNotAsked):
			outcome = "not_asked"
		case err != nil:
			outcome = "failed"
		case rec == nil:
			outcome = "none"
		case auction.DigestMatchesRecord(d, rec, t.now()) != nil:
			outcome = "not_backing"
		}
		t.recordAsks.WithLabelValues(outcome).Inc()
		if outcome == "backed" {
			return rec, "peer"
		}
	}
	return nil, ""
}

// retryCheck schedules one more check of a held provider whose record
// did not back its digest yet; it reports whether it did. A provider's
// own digest may have outrun its record and gets recordTries checks; a
// digest a peer passed on (or served) gets passedOnTries: that peer found
// the record, but a record put a moment ago can reach the DHT peers this
// node asks a little later (a NATed renter's first digests came from the
// bootstrap peer within 50 ms of the provider's put). More tries would
// give a forwarder of made-up providers more lookups per key.
func (t *Trust) retryCheck(p string) bool {
	retry := false
	var after time.Duration
	t.ev.update(p, t.now(), func(ev *peerEvidence) {
		tries := passedOnTries
		if ev.blame == "" || ev.blame.String() == p {
			tries = recordTries
		}
		if ev.held && ev.tries+1 < tries {
			after = recordRetryAfter << ev.tries
			ev.tries++
			ev.checking = false
			retry = true
		}
	})
	if retry {
		time.AfterFunc(after, func() { t.queueCheck(p) })
	}
	return retry
}

// checkDone records a check's outcome: err nil means rec backs d.
func (t *Trust) checkDone(p string, d *auction.Digest, rec *auction.Capacity, err error) {
	now := t.now()
	var wasHeld, backed bool
	var sources []string
	var blame peer.ID
	t.ev.update(p, now, func(ev *peerEvidence) {
		ev.checking, ev.checkedAt, ev.tries = false, now, 0
		wasHeld, sources, blame = ev.held, ev.sources, ev.blame
		ev.held, ev.sources, ev.blame = false, nil, ""
		if d != nil && err == nil {
			ev.RecordUntil, ev.capSeq, ev.everBacked = time.UnixMilli(rec.ExpiresAtMs), rec.Seq, true
			ev.serves = auction.ProviderShards(rec)
		}
		backed = ev.Backed(now)
		if !backed && d != nil {
			ev.unbackedUntil = now.Add(unbackedFor)
		}
	})
	switch {
	case d == nil:
		if wasHeld {
			t.newPeers.give(now, sources...)
		}
	case err == nil:
		if wasHeld {
			t.newPeers.give(now, sources...)
			t.learnt(d)
		}
	case !backed:
		if _, raw, ok := t.digests.Get(p); ok {
			t.sync.forget(raw)
		}
		t.digests.Remove(p)
		t.log.Debug("digest dropped: its record does not back it", "provider", p, "err", err)
		if wasHeld && blame != "" && blame.String() != p && blame != t.self && !errors.Is(err, errLookupTimedOut) {
			t.p2p.Guard().Charge(blame, AbuseDigestUnbacked, unbackedPoints)
		}
	}
}

// recheckRecords queues a check of every backed provider in the book
// whose matched record expires within recheckBefore, and of every held
// one a full queue left unchecked (or lets it go when its digest is gone).
func (t *Trust) recheckRecords() {
	now := t.now()
	var due []string
	t.ev.mu.Lock()
	for p, ev := range t.ev.by {
		renew := ev.Backed(now) && ev.RecordUntil.Sub(now) < recheckBefore && now.Sub(ev.checkedAt) >= recheckEvery
		if !ev.checking && (renew || ev.held) {
			due = append(due, p)
		}
	}
	t.ev.mu.Unlock()
	for _, p := range due {
		if _, _, ok := t.digests.Get(p); ok {
			t.queueCheck(p)
		} else if t.ev.of(p).held {
			t.checkDone(p, nil, nil, nil)
		}
	}
}
