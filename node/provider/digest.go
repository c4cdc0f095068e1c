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

// digester gossips this provider's signed capacity digest on the digest
// topic of each of its shards: when its capacity changes (after the
// advertiser publishes) and on the republish timer, well within the
// digest's lifetime.
type digester struct {
	digesterDeps

	mu  sync.Mutex
	seq uint64
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
	// due wakes the digester when the capacity changed.
	due wakeup
}

func newDigester(d digesterDeps) *digester { return &digester{digesterDeps: d} }

func (d *digester) run(ctx context.Context) {
	if err := d.p2p.WaitReady(ctx); err != nil {
		return
	}
	every := max(d.republish/2, time.Second)
	// Right after start the shard's mesh is still forming and a digest
	// reaches few peers: send it again a few times, sooner.
	early := []time.Duration{2 * time.Second, 5 * time.Second, 15 * time.Second, 30 * time.Second}
	timer := time.NewTimer(0)
	defer timer.Stop()
	var lastSent time.Time
	for {
		d.publish(ctx)
		lastSent = time.Now()
		next := every
		if len(early) > 0 {
			next, early = min(early[0], every), early[1:]
		}
		timer.Reset(next)
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-d.due:
			if gap := digestMinGap - time.Since(lastSent); gap > 0 {
				select {
				case <-ctx.Done():
					return
				case <-time.After(gap):
				}
			}
		}
	}
}

// publish builds, signs and gossips one digest.
func (d *digester) publish(ctx context.Context) {
	rec, err := d.capacity(1)
	if err != nil {
		d.log.Warn("build digest", "err", err)
		return
	}
	now := d.now()
	d.mu.Lock()
	d.seq = max(d.seq+1, uint64(now.UnixMilli()))
	seq := d.seq
	d.mu.Unlock()
	if cur := d.published(); cur != nil {
		rec.Seq = cur.Seq
	}
	dg, err := auction.NewDigest(auction.DigestInput{
		Capacity: rec, Held: d.firmHeld(), Seq: seq, Now: now, TTL: d.ttl,
	})
	if err != nil {
		d.log.Warn("build digest", "err", err)
		return
	}
	raw, err := auction.SealDigest(dg, d.key)
	if err != nil {
		d.log.Warn("seal digest", "err", err)
		return
	}
	for _, s := range dg.Shards() {
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		if err := d.p2p.Publish(pctx, s.DigestTopic(), raw, 0); err != nil {
			d.log.Debug("publish digest", "shard", s, "err", err)
		}
		cancel()
	}
}
