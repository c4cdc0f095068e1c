package renter

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/idlegrid/idlegrid/auction"
)

// shardWait bounds how long an auction waits for the market view to name
// a shard for its RFQ, or for a shard to have a subscriber: a renter that
// just started has not synced the digests yet.
const shardWait = 10 * time.Second

// shardsFor picks the RFQ shards of a job: those of the GPU models it
// names, and those in the market view that fit it, cheapest first. A job
// that names no model waits (bounded) for the view to know a shard.
func (au *auctioneer) shardsFor(ctx context.Context, rfq *auction.RFQ) []auction.Shard {
	if au.shards == nil {
		return auction.RFQShards(rfq, nil)
	}
	deadline := au.now().Add(shardWait)
	for {
		if s := au.shards(rfq); len(s) > 0 {
			return s
		}
		if !au.now().Before(deadline) {
			return auction.RFQShards(rfq, nil)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// publish sends a sealed RFQ to each of its topics at once (a shard's, or
// a lot's), waiting (bounded) for a subscriber of each so a fresh renter
// does not publish into the void; a shard that had no subscriber last
// time gets a short wait only (noSubscriberWait), so dead shards cannot
// hold an auction up. It succeeds when at least one topic took it.
func (au *auctioneer) publish(ctx context.Context, raw []byte, topics []auction.ShardTopic) error {
	if len(topics) == 0 {
		return errors.New("no shard serves the GPUs this job asks for")
	}
	errs := make([]error, len(topics))
	var wg sync.WaitGroup
	for i, st := range topics {
		wait := shardWait
		if au.silence != nil && !au.silence.waitForSubscriber(st.Shard, au.now()) {
			wait = noSubscriberWait
		}
		wg.Go(func() {
			pctx, cancel := context.WithTimeout(ctx, wait)
			defer cancel()
			if err := au.p2p.Publish(pctx, st.Topic(), raw, 1); err != nil {
				errs[i] = fmt.Errorf("%s: %w", st.Topic(), err)
			}
			if au.silence != nil && ctx.Err() == nil {
				au.silence.subscribers(st.Shard, errs[i] == nil, au.now())
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err == nil {
			return nil
		}
	}
	return errors.Join(errs...)
}

// noSubscriberWait is how long a publish waits for a subscriber on a shard
// that had none the last time.
const noSubscriberWait = 500 * time.Millisecond
