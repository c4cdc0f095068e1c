package renter

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// TestLongLeaseVerifiesOnlyWhatIsNew: a service lease of two GPUs runs
// for hours; the renter verifies each window with the tail it still
// needs, not the whole segment again, so what it verifies stays a couple
// of entries and what it keeps stays within a double-lease proof's
// length however long the lease runs, and every window is paid. The
// checks that span windows still hold across the dropped part: a gap in
// a GPU's telemetry longer than the allowance, a window that gives a
// leased GPU to another lease, and an entry that does not link to the
// last one each stop the payments. A job another renter starts on a
// leased GPU is proven a double lease from the lease's own started
// event, while that is within a proof's length.
func TestLongLeaseVerifiesOnlyWhatIsNew(t *testing.T) {
	const long = 400 // one-minute windows, past maxProofEntries + proofSlack
	for _, tc := range []struct {
		name    string
		windows int
		bad     func(c *tailChain) []byte // the entry after the good ones; nil: none
		want    string                    // what stops the payments
	}{
		{name: "honest", windows: long},
		{name: "gap", windows: long, want: fmt.Sprintf("%q check", attest.CheckCoverage), bad: func(c *tailChain) []byte {
			c.clock(c.terms.Allowance() + time.Minute)
			return c.window(c.lease.ID, c.lease.Renter, time.Minute)
		}},
		{name: "other_lease", windows: long, want: fmt.Sprintf("%q check", attest.CheckCoverage), bad: func(c *tailChain) []byte {
			return c.window(attest.RecordID([]byte("another lease")).String(), c.lease.Renter, time.Minute)
		}},
		{name: "unlinked", windows: long, want: fmt.Sprintf("%q check", attest.CheckContinuity), bad: func(c *tailChain) []byte {
			c.chain = c.fork()
			return c.window(c.lease.ID, c.lease.Renter, time.Minute)
		}},
		{name: "double_lease", windows: 200, want: "fraud proof published", bad: func(c *tailChain) []byte {
			return c.append(&attest.JobEvent{Lease: attest.RecordID([]byte("another renter's lease")).String(), Renter: otherRenter(t),
				Job: attest.RecordID([]byte("another job")).String(), Event: attest.JobStarted, GPUs: c.lease.GPUs[:1]})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newTailChain(t)
			for range tc.windows {
				c.feed(c.window(c.lease.ID, c.lease.Renter, time.Minute))
			}
			if c.py.stopped != "" {
				t.Fatalf("payments stopped on an honest chain: %s", c.py.stopped)
			}
			if n := len(c.py.entries) - c.py.verifyFrom; n > 2 {
				t.Fatalf("after %d windows the payer verifies the next with %d entries, want the last window only", tc.windows, n)
			}
			if n := len(c.py.entries); n > maxProofEntries+proofSlack {
				t.Fatalf("after %d windows the payer keeps %d entries, want at most %d", tc.windows, n, maxProofEntries+proofSlack)
			}
			if got := c.vouchers(); got != tc.windows {
				t.Fatalf("%d vouchers for %d verified windows", got, tc.windows)
			}
			if tc.bad == nil {
				return
			}
			c.feed(tc.bad(c))
			if !strings.Contains(c.py.stopped, tc.want) {
				t.Fatalf("payments after a bad entry: stopped %q, want %s", c.py.stopped, tc.want)
			}
		})
	}
}

// tailChain is a provider's chain for one renter lease of two GPUs, fed
// entry by entry to the renter's payer.
type tailChain struct {
	t     *testing.T
	r     *Renter
	f     *fakeProvider
	py    *payer
	lease *store.Lease
	terms interface{ Allowance() time.Duration }
	chain *attest.Chain
	fp    *attest.Fingerprint
	clock func(time.Duration)
	// energyMJ is each GPU's energy counter.
	energyMJ uint64
}

func newTailChain(t *testing.T) *tailChain {
	t.Helper()
	r, me, provs := newRenter(t, 1)
	f := provs[0]
	fp := &attest.Fingerprint{Driver: "550.54.15", CUDA: "12.4"}
	for i := range 2 {
		fp.GPUs = append(fp.GPUs, attest.GPUFact{
			UUID: fmt.Sprintf("GPU-8b7c1f2e-0000-4000-8000-%012d", i+1), Name: "NVIDIA H100 80GB HBM3",
			PCIDeviceID: 0x233010DE, MemoryMiB: 81559, ComputeCap: "9.0", PowerLimitMW: 700_000,
		})
	}
	l := renterLease(t, r, f, 0, 2_000_000)
	l.GPUs = []string{fp.GPUs[0].UUID, fp.GPUs[1].UUID}
	if err := r.payments.leases.Put(l); err != nil {
		t.Fatal(err)
	}
	chain, err := attest.NewChain(f.Key, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &tailChain{
		t: t, r: r, f: f, lease: l, chain: chain, fp: fp, terms: lease.Agreed(l), energyMJ: 1_000_000,
		py:    &payer{d: &r.payments.payerDeps, l: l, provider: f.ID, terms: lease.Agreed(l), lastWindow: r.now()},
		clock: me.Clock.Advance,
	}
	c.feed(c.append(fp))
	c.feed(c.append(&attest.JobEvent{Lease: l.ID, Renter: l.Renter, Job: attest.RecordID([]byte("job")).String(), Event: attest.JobStarted, GPUs: l.GPUs}))
	return c
}

// append seals body as the chain's next entry, dated now.
func (c *tailChain) append(body attest.Body) []byte {
	c.t.Helper()
	raw, _, err := c.chain.Append(c.r.now().UnixMilli(), body)
	if err != nil {
		c.t.Fatal(err)
	}
	return raw
}

// window advances the clock by d and closes a telemetry window over it
// giving both GPUs to lease of renter, at a steady 350 W.
func (c *tailChain) window(lease, renter string, d time.Duration) []byte {
	c.t.Helper()
	start := c.r.now()
	c.clock(d)
	w := attest.NewTelemetryWindow(start.UnixMilli(), attest.RecordID(c.fingerprintRaw()).String())
	for _, g := range c.fp.GPUs {
		if err := w.Assign(g.UUID, lease, renter); err != nil {
			c.t.Fatal(err)
		}
		for _, at := range []time.Time{start, c.r.now()} {
			e := c.energyMJ
			if at.After(start) {
				e += 350 * uint64(d.Milliseconds()) // W x ms = mJ
			}
			s := attest.GPUSample{UUID: g.UUID, AtMs: at.UnixMilli(), UtilBP: 5000, MemUsedMiB: 1024, TempC: 60, PowerMW: 350_000, EnergyMJ: e}
			if err := w.Add(s); err != nil {
				c.t.Fatal(err)
			}
		}
	}
	c.energyMJ += 350 * uint64(d.Milliseconds())
	t, err := w.Close(c.r.now().UnixMilli())
	if err != nil {
		c.t.Fatal(err)
	}
	return c.append(t)
}

// fingerprintRaw is the chain's first entry, the fingerprint.
func (c *tailChain) fingerprintRaw() []byte { return c.py.fingerprints[0] }

// fork is a chain of the same key continuing from a head that is not the
// last entry: its next entry does not link to what the payer holds.
func (c *tailChain) fork() *attest.Chain {
	c.t.Helper()
	h := *c.chain.Head()
	h.ID = attest.RecordID([]byte("an entry the renter never saw")).String()
	forked, err := attest.NewChain(c.f.Key, &h)
	if err != nil {
		c.t.Fatal(err)
	}
	return forked
}

func (c *tailChain) feed(raw []byte) { c.py.entry(context.Background(), raw) }

func (c *tailChain) vouchers() int {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	return len(c.f.vouchers)
}

// otherRenter is a fresh renter's peer ID.
func otherRenter(t *testing.T) string {
	t.Helper()
	k, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	id, err := peer.IDFromPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return id.String()
}
