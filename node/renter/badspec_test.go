package renter

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/roomtest"
	"github.com/idlegrid/idlegrid/p2p"
)

// TestBadJobSpecPostsNothing: an invalid spec is refused with a message
// naming the problem, stores no job and publishes no RFQ. A peer on the
// RFQ shard sees the one good spec submitted after them, and only it, so
// the silence before is not a network that carries nothing. (It was a
// cluster test; nothing in it needs more than one room.)
func TestBadJobSpecPostsNothing(t *testing.T) {
	r, _, provs := newRenter(t, 1)
	roomtest.Run(t, r.Run)
	roomtest.Eventually(t, 10*time.Second, "the renter to run", func() bool { return r.bg.running() })
	var (
		mu   sync.Mutex
		seen []string // job CIDs of the RFQs the shard carried
	)
	topic := auction.GPUShard("a10").RFQTopic()
	if err := provs[0].P2P.Subscribe(t.Context(), topic, func(m p2p.Message) {
		rfq, _, err := auction.OpenRFQ(m.Data)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			seen = append(seen, "unreadable: "+err.Error())
			return
		}
		seen = append(seen, rfq.JobCID)
	}); err != nil {
		t.Fatal(err)
	}
	bad := []struct{ spec, want string }{
		{"module: " + testModule + "\ngpus: 1\ngpu: a10\ntier: platinum\nmax_price: 1\nduration: 1h\n", "tier"},
		{"image: ubuntu:22.04\ngpus: 1\ngpu: a10\nmax_price: 1\nduration: 1h\n", "sha256"},
		{"module: " + testModule + "\ngpus: 1\ngpu: a10\nmax_price: 1\nduraton: 1h\n", "duration"},
		{"module: " + testModule + "\ngpus: 1\ngpu: a10\nduration: 1h\n", "max_price"},
		{"module: " + testModule + "\ngpus: 1\ngpu: a10\nmax_price: 1\nduration: 1h\nreplicas: 9\n", "replicas"},
	}
	for _, b := range bad {
		_, err := r.Submit([]byte(b.spec))
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("spec %q: error %v should name %q", b.spec, err, b.want)
		}
	}
	if jobs, err := r.db.Jobs(); err != nil || len(jobs) != 0 {
		t.Fatalf("bad specs stored %d jobs (%v)", len(jobs), err)
	}
	good, err := r.Submit(fmt.Appendf(nil, "module: %s\ngpus: 1\ngpu: a10\nmax_price: 1\nduration: 1h\nbid_window: 1s\n", testModule))
	if err != nil {
		t.Fatal(err)
	}
	roomtest.Eventually(t, 30*time.Second, "the good spec's RFQ on the shard", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) > 0
	})
	mu.Lock()
	defer mu.Unlock()
	for _, got := range seen {
		if got != good.SpecCID {
			t.Fatalf("the shard carried %q; only the good spec %s was sent", got, good.SpecCID)
		}
	}
}
