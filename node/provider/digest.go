package provider

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/p2p"
)

// digestMinGap bounds how often a provider gossips a changed digest: a
// burst of leases and releases costs one digest a second, not one each.
const digestMinGap = time.Second

// A digest is sent again at least every digestRefresh (half the republish
// interval when that is shorter; longer in a large shard, see
// auction.DigestRefresh) and lives digestLives refreshes: a provider that
// stops without a word (crashed, cut off) leaves every market view when
// its last digest goes stale, within minutes in a shard of up to a few
// hundred providers, within its record's TTL in any.
const (
	digestRefresh = time.Minute
	digestLives   = 3
)

// A provider that stops on purpose withdraws its offer: a last digest
// with nothing free that lives withdrawnTTL, sent with withdrawTimeout to
// spare, then withdrawLinger for gossip to carry it before the host
// closes. It supersedes the digest every node holds (a higher seq, signed
// by the provider's own key) and expires soon after, so the provider
// leaves their market views within seconds; replayed later it is expired
// or older than the provider's newer digests, so it never removes a live
// provider.
const (
	withdrawnTTL    = 3 * time.Second
	withdrawTimeout = 2 * time.Second
	withdrawLinger  = 500 * time.Millisecond
)

// digester gossips this provider's signed capacity digest on the digest
// topic of each of its shards: when its capacity changes (after the
// advertiser publishes) and on the republish timer, well within the
// digest's lifetime; never before the first record is published.
type digester struct {
	digesterDeps

	mu  sync.Mutex
	seq uint64
	// last is the digest last gossiped on each shard, and when.
	last map[auction.Shard]sentDigest
}

// sentDigest is a digest gossiped on a shard.
type sentDigest struct {
	dg *auction.Digest
	at time.Time
}

// digesterDeps are what the digester builds a digest from.
type digesterDeps struct {
	log *slog.Logger
	now func() time.Time
	key crypto.PrivKey
	p2p *p2p.Node
	// republish and ttl are provider.republish and provider.record_ttl:
	// how often a digest is sent unchanged, and how long it stays valid.
	republish time.Duration
	ttl       time.Duration
	// capacity builds the capacity record as of now; published is the
	// record last put in the DHT (nil before the first).
	capacity  func(seq uint64) (*auction.Capacity, error)
	published func() *auction.Capacity
	// firmHeld are the GPUs under firm hold now.
	firmHeld func() map[string]bool
	// shardSize is the number of providers in the largest of this
	// provider's shards as its market view holds them (0: unknown).
	shardSize func() int
	// lots counts the lots of the provider's shards, those of the record
	// it is given (lotCounts.update: it joins a new lot's topics before the
	// digest naming it goes out); topics are where a message for a shard's
	// topic goes (lotCounts.topics). nil: one lot everywhere.
	lots   func(shards []auction.Shard) map[auction.Shard]int
	topics func(s auction.Shard, topic string) []string
	// due wakes the digester when the capacity changed.
	due wakeup
}

func newDigester(d digesterDeps) *digester { return &digester{digesterDeps: d} }

func (d *digester) run(ctx context.Context) {
	if err := d.p2p.WaitReady(ctx); err != nil {
		return
	}
	// Right after start the shard's mesh is still forming and a digest
	// reaches few peers: send it again a few times, sooner.
	early := []time.Duration{2 * time.Second, 5 * time.Second, 15 * time.Second, 30 * time.Second}
	timer := time.NewTimer(0)
	defer timer.Stop()
	var lastSent time.Time
	everywhere := true // a timer's send goes to every shard; a change's where it changed
	for {
		d.send(ctx, false, everywhere)
		lastSent = time.Now()
		every := d.refresh()
		next := every
		if len(early) > 0 {
			next, early = min(early[0], every), early[1:]
		}
		timer.Reset(next)
		select {
		case <-ctx.Done():
			d.withdraw(context.WithoutCancel(ctx))
			return
		case <-timer.C:
			everywhere = true
		case <-d.due:
			everywhere = false
			if gap := digestMinGap - time.Since(lastSent); gap > 0 {
				select {
				case <-ctx.Done():
					d.withdraw(context.WithoutCancel(ctx))
					return
				case <-time.After(gap):
				}
			}
		}
	}
}

// refresh is how often the digest is sent unchanged: a minute (or half
// the republish interval), stretched in a large shard (auction.DigestRefresh)
// up to a third of the record's TTL, the longest a digest may live.
func (d *digester) refresh() time.Duration {
	base := min(max(d.republish/2, time.Second), digestRefresh)
	n := 0
	if d.shardSize != nil {
		n = d.shardSize()
	}
	return auction.DigestRefresh(n, base, d.ttl/digestLives)
}

// withdraw sends the provider's last digest as it stops (see
// withdrawnTTL).
func (d *digester) withdraw(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, withdrawTimeout)
	defer cancel()
	if d.send(ctx, true, true) {
		d.log.Info("offer withdrawn", "digest_expires_in", withdrawnTTL)
		select {
		case <-ctx.Done():
		case <-time.After(withdrawLinger):
		}
	}
}

// send builds, signs and gossips one digest, the withdrawal when
// withdrawn: on every shard when everywhere, else on the shards it
// changed for and those due a refresh (shardsToSend). It reports whether
// the digest went out on a shard.
func (d *digester) send(ctx context.Context, withdrawn, everywhere bool) bool {
	cur := d.published()
	if cur == nil {
		// No record is out yet to back a digest: every node would hold
		// it and look for a record that is not there (and this node
		// would have none to serve). The first publish wakes the loop.
		return false
	}
	rec, err := d.capacity(1)
	if err != nil {
		d.log.Warn("build digest", "err", err)
		return false
	}
	now := d.now()
	d.mu.Lock()
	d.seq = max(d.seq+1, uint64(now.UnixMilli()))
	seq := d.seq
	d.mu.Unlock()
	rec.Seq = cur.Seq
	ttl := min(d.ttl, digestLives*d.refresh())
	if withdrawn {
		ttl = withdrawnTTL
	}
	var lots map[auction.Shard]int
	if d.lots != nil {
		lots = d.lots(auction.ProviderShards(rec))
	}
	dg, err := auction.NewDigest(auction.DigestInput{
		Capacity: rec, Held: d.firmHeld(), Seq: seq, Now: now, TTL: ttl, Withdrawn: withdrawn, Lots: lots,
	})
	if err != nil {
		d.log.Warn("build digest", "err", err)
		return false
	}
	raw, err := auction.SealDigest(dg, d.key)
	if err != nil {
		d.log.Warn("seal digest", "err", err)
		return false
	}
	sent := false
	for _, s := range d.shardsToSend(dg, now, everywhere) {
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		for _, topic := range shardTopics(d.topics, s, s.DigestTopic()) {
			if err := d.p2p.Publish(pctx, topic, raw, 0); err != nil {
				d.log.Debug("publish digest", "topic", topic, "err", err)
			} else {
				sent = true
				d.noteSent(s, dg, now)
			}
		}
		cancel()
	}
	return sent
}

// shardsToSend are the shards of dg to gossip it on now: all of them
// when everywhere; else those dg changed for (auction.DigestChangedFor:
// an A10 hold is news on the A10 shard, not on the CPU shard every
// wasm-capable provider is on) and those whose last digest went out half
// a refresh ago or more, so each gets one at least every refresh and a
// half while changes elsewhere keep the refresh timer from firing (a
// digest lives three).
func (d *digester) shardsToSend(dg *auction.Digest, now time.Time, everywhere bool) []auction.Shard {
	all := dg.Shards()
	if everywhere {
		return all
	}
	half := d.refresh() / 2
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []auction.Shard
	for _, s := range all {
		last, ok := d.last[s]
		if !ok || now.Sub(last.at) >= half || auction.DigestChangedFor(last.dg, dg, s) {
			out = append(out, s)
		}
	}
	return out
}

// noteSent records dg gossiped on s at now.
func (d *digester) noteSent(s auction.Shard, dg *auction.Digest, now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.last == nil {
		d.last = map[auction.Shard]sentDigest{}
	}
	d.last[s] = sentDigest{dg: dg, at: now}
}
