package provider

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/auction"
)

// TestNoDigestBeforeTheFirstRecord: a provider gossips no capacity digest
// until its first capacity record is out, so that every peer checking the
// digest finds the record (and can ask this provider for it); from then
// on each digest names that record.
func TestNoDigestBeforeTheFirstRecord(t *testing.T) {
	r := newRoom(t, 1)
	ctx := context.Background()
	if r.p.digest.send(ctx, false, true) {
		t.Fatal("a digest went out before any capacity record")
	}
	if r.p.SealedCapacity() != nil {
		t.Fatal("a sealed record before the first publish")
	}
	fakePublished(t, r)
	if !r.p.digest.send(ctx, false, true) {
		t.Fatal("no digest went out once a record was published")
	}
}

// fakePublished marks a capacity record published (as if put in the
// DHT), so digests may name it.
func fakePublished(t *testing.T, r *room) {
	t.Helper()
	rec, err := r.p.adv.build(7)
	if err != nil {
		t.Fatal(err)
	}
	r.p.adv.mu.Lock()
	r.p.adv.current, r.p.adv.sealed = rec, []byte("sealed")
	r.p.adv.mu.Unlock()
}

// TestDigestRefreshStretchesInLargeShards: the digester refreshes every
// minute (or half the republish interval) in a small shard, and less often
// in a large one, up to a third of the record's TTL, as its market view
// grows.
func TestDigestRefreshStretchesInLargeShards(t *testing.T) {
	size := 0
	d := newDigester(digesterDeps{republish: 10 * time.Minute, ttl: 30 * time.Minute, shardSize: func() int { return size }})
	for _, c := range []struct {
		providers int
		want      time.Duration
	}{
		{0, time.Minute}, {50, time.Minute}, {1000, 500 * time.Second}, {20_000, 10 * time.Minute},
	} {
		size = c.providers
		if got := d.refresh(); got != c.want {
			t.Errorf("%d providers: refresh %v, want %v", c.providers, got, c.want)
		}
	}
	short := newDigester(digesterDeps{republish: 4 * time.Second, ttl: 30 * time.Second, shardSize: func() int { return 20_000 }})
	if got := short.refresh(); got != 10*time.Second {
		t.Errorf("a devnet's 4s republish and 30s TTL in a large shard: refresh %v, want 10s", got)
	}
}

// TestDigestGoesWhereItChanged: a change-driven digest goes to the shards
// it changed for, and to the others only once half their refresh has
// passed; a firm hold alone is no change; a timer's digest goes
// everywhere.
func TestDigestGoesWhereItChanged(t *testing.T) {
	d := newDigester(digesterDeps{republish: 10 * time.Minute, ttl: 30 * time.Minute})
	base := &auction.Digest{
		Peer: "p", Seq: 1, Runtimes: []string{auction.RuntimeDocker, auction.RuntimeWasm},
		Models: []auction.DigestModel{{Model: "a10-24gb", Total: 2, Free: 2}},
		CPU:    &auction.CPUOffer{Cores: 4, RAMMiB: 8192, FreeCores: 4, FreeRAMMiB: 8192, FloorMicro: 20_000},
	}
	a10, cpu := auction.GPUShard("a10"), auction.ShardCPU
	now := time.Unix(1_800_000_000, 0)
	if got := d.shardsToSend(base, now, false); !slices.Equal(got, []auction.Shard{a10, cpu}) {
		t.Fatalf("first digest: %v, want both shards", got)
	}
	for _, s := range []auction.Shard{a10, cpu} {
		d.noteSent(s, base, now)
	}
	leased := *base
	leased.Seq, leased.Models = 2, []auction.DigestModel{{Model: "a10-24gb", Total: 2, Free: 1}}
	if got := d.shardsToSend(&leased, now.Add(time.Second), false); !slices.Equal(got, []auction.Shard{a10}) {
		t.Errorf("an A10 leased a second later: %v, want the A10 shard only", got)
	}
	// A firm hold lasts seconds: it goes out with the next digest sent for
	// another reason, not in one of its own to the whole shard.
	held := *base
	held.Seq, held.Models = 2, []auction.DigestModel{{Model: "a10-24gb", Total: 2, Free: 1, Held: 1}}
	if got := d.shardsToSend(&held, now.Add(time.Second), false); len(got) != 0 {
		t.Errorf("an A10 held a second later: %v, want no shard", got)
	}
	if got := d.shardsToSend(&held, now.Add(30*time.Second), false); !slices.Equal(got, []auction.Shard{a10, cpu}) {
		t.Errorf("half a refresh (30s) later: %v, want both", got)
	}
	if got := d.shardsToSend(base, now.Add(time.Second), true); !slices.Equal(got, []auction.Shard{a10, cpu}) {
		t.Errorf("a timer's digest: %v, want both", got)
	}
}
