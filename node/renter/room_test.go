package renter

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	mh "github.com/multiformats/go-multihash"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/attest/reputation"
	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/auction/query"
	"github.com/idlegrid/idlegrid/node/executor"
	"github.com/idlegrid/idlegrid/node/jobproto"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/node/roomtest"
	"github.com/idlegrid/idlegrid/store"
)

// testModuleBytes is the WASM module the test renters hold (submit refuses
// a module the renter does not hold); testModule is its CID.
var (
	testModuleBytes = []byte("test-module")
	testModule      = testModuleCID()
)

func testModuleCID() string {
	sum := sha256.Sum256(testModuleBytes)
	h, err := mh.Encode(sum[:], mh.SHA2_256)
	if err != nil {
		panic(err)
	}
	return cid.NewCidV1(cid.Raw, h).String()
}

// prior is a reputation book that knows nobody.
type prior struct{}

func (prior) Of(p string) reputation.Result {
	return reputation.Score(p, reputation.Evidence{}, time.Now(), reputation.DefaultConfig())
}
func (prior) Scores() map[string]float64 { return nil }
func (prior) LeaseEnded(*store.Lease)    {}

// fakeProvider answers awards (accepting or declining) and takes
// vouchers, as a provider would, on its own mocknet peer.
type fakeProvider struct {
	*roomtest.Peer
	decline string // non-empty: decline every award with this reason
	// accept, when set, are the GPUs its acceptances name instead of the
	// award's (a provider that substituted GPUs taken since its bid).
	accept []string

	mu       sync.Mutex
	awards   int
	vouchers []*attest.Voucher
	refuse   bool // refuse vouchers with a remote error
	silent   bool // reset status requests, as a dead provider's host would
	drop     bool // reset voucher requests unanswered, as a killed provider would
	// down resets that many more voucher and receipt requests, as a
	// provider restarting for a while would; receipts are the sealed
	// receipts served, each over the latest voucher taken when asked.
	down        int
	rawVouchers [][]byte
	receipts    [][]byte
	receiptAsks int

	statusRefused int
}

func (f *fakeProvider) serve(t *testing.T) {
	f.P2P.HandleRequests(lease.LeaseProto, "test.lease", lease.LeaseLimits, func(_ context.Context, _ peer.ID, req []byte) ([]byte, error) {
		aw, _, err := auction.OpenAward(req)
		if err != nil {
			return nil, err
		}
		f.mu.Lock()
		f.awards++
		f.mu.Unlock()
		id := attest.RecordID(req).String()
		now := f.Clock.Now().UnixMilli()
		if f.decline != "" {
			raw, err := auction.SealDecline(&auction.Decline{V: auction.MessagesVersion, Provider: f.ID.String(), Award: id, Reason: f.decline, AtMs: now}, f.Key)
			return append([]byte{lease.TagDecline}, raw...), err
		}
		gpus := aw.GPUs
		if f.accept != nil {
			gpus = f.accept
		}
		raw, err := auction.SealLeaseAcceptance(&auction.LeaseAcceptance{
			V: auction.MessagesVersion, Provider: f.ID.String(), Award: id, GPUs: gpus, AcceptedMs: now, StartsAtMs: now,
		}, f.Key)
		return append([]byte{lease.TagAccept}, raw...), err
	})
	f.P2P.HandleFrames(lease.JobProto, "test.job", lease.JobLimits, func(ctx context.Context, _ peer.ID, raw []byte, send func([]byte) error) error {
		req, err := jobproto.DecodeRequest(raw)
		if err != nil {
			return err
		}
		if req.Op == jobproto.OpStatus {
			f.mu.Lock()
			silent := f.silent
			f.mu.Unlock()
			if silent {
				f.mu.Lock()
				f.statusRefused++
				f.mu.Unlock()
				return errors.New("gone")
			}
			// The lease runs: version 1 at once, then each long poll
			// waits a little for a change that never comes.
			if req.After >= 1 {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(100 * time.Millisecond):
				}
			}
			return lease.SendHeader(send, &jobproto.Header{V: jobproto.Version, Status: &jobproto.Status{Version: 1, State: lease.Running}})
		}
		if req.Op != jobproto.OpVoucher && req.Op != jobproto.OpReceipt {
			return lease.Refuse(send, jobproto.CodeNotFound, "not served by this fake")
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.down > 0 {
			f.down--
			return errors.New("restarting")
		}
		if req.Op == jobproto.OpReceipt {
			return f.serveReceipt(req.Lease, send)
		}
		if f.drop {
			return errors.New("gone")
		}
		if f.refuse {
			return lease.Refuse(send, jobproto.CodeInvalid, "refused")
		}
		v, err := attest.OpenVoucher(req.Voucher)
		if err != nil {
			return lease.Refuse(send, jobproto.CodeInvalid, "%v", err)
		}
		f.vouchers = append(f.vouchers, v)
		f.rawVouchers = append(f.rawVouchers, req.Voucher)
		return lease.SendHeader(send, &jobproto.Header{V: jobproto.Version})
	})
}

// serveReceipt answers a receipt request over the latest voucher taken
// (none taken: not ready). f.mu is held.
func (f *fakeProvider) serveReceipt(id string, send func([]byte) error) error {
	f.receiptAsks++
	if len(f.vouchers) == 0 {
		return lease.Refuse(send, jobproto.CodeNotReady, "no receipt yet")
	}
	v := f.vouchers[len(f.vouchers)-1]
	raw, err := attest.SealReceipt(&attest.Receipt{
		V: attest.RecordsVersion, Lease: id, Provider: f.ID.String(), Renter: v.Renter, Outcome: lease.Completed,
		AtMs: v.CoveredUntilMs, Voucher: f.rawVouchers[len(f.rawVouchers)-1],
	}, f.Key)
	if err != nil {
		return err
	}
	if len(f.receipts) == 0 || string(f.receipts[len(f.receipts)-1]) != string(raw) {
		f.receipts = append(f.receipts, raw)
	}
	return lease.SendHeader(send, &jobproto.Header{V: jobproto.Version, Receipt: raw})
}

// newRenter builds a renter room with n fake providers beside it.
func newRenter(t *testing.T, n int) (*Renter, *roomtest.Peer, []*fakeProvider) {
	t.Helper()
	return newRenterWith(t, n, nil)
}

// newRenterWith is newRenter with the room's config changed by tweak.
func newRenterWith(t *testing.T, n int, tweak func(*Config)) (*Renter, *roomtest.Peer, []*fakeProvider) {
	t.Helper()
	peers := roomtest.Peers(t, n+1)
	me := peers[0]
	dir := t.TempDir()
	arts, err := executor.NewDirArtifacts(filepath.Join(dir, "artifacts"))
	if err != nil {
		t.Fatal(err)
	}
	if id, err := arts.PutBytes(testModuleBytes); err != nil || id != testModule {
		t.Fatalf("test module: %s, %v; want %s", id, err, testModule)
	}
	cfg := Config{
		ReliabilityPrior: 0.9,
		Attest:           lease.Terms{Sample: time.Second, Window: time.Minute, VoucherInterval: time.Minute, VoucherGrace: 30 * time.Second, MaxSkew: 2 * time.Minute, EnergyTolerance: 0.15},
		CancelWait:       time.Second,
	}
	if tweak != nil {
		tweak(&cfg)
	}
	r, err := New(cfg, Deps{
		Clock: me.Clock.Now, Key: me.Key, P2P: me.P2P, Store: me.Store, Leases: me.Leases, Artifacts: arts, WorkDir: dir,
		Offers:     func(context.Context) ([]query.Offer, error) { return nil, nil },
		Reputation: prior{},
	})
	if err != nil {
		t.Fatal(err)
	}
	var provs []*fakeProvider
	for _, p := range peers[1:] {
		f := &fakeProvider{Peer: p}
		f.serve(t)
		provs = append(provs, f)
	}
	return r, me, provs
}

// rfq builds the renter's RFQ for a job of gpus GPUs.
func rfqFor(t *testing.T, r *Renter, gpus int) (*auction.JobSpec, *auction.RFQ, string) {
	t.Helper()
	return rfqTier(t, r, gpus, auction.TierSilver)
}

// rfqTier builds the renter's RFQ for a job of gpus GPUs in tier.
func rfqTier(t *testing.T, r *Renter, gpus int, tier auction.Tier) (*auction.JobSpec, *auction.RFQ, string) {
	t.Helper()
	spec, err := auction.ParseJobSpec(fmt.Appendf(nil, "module: %s\ngpus: %d\nmax_price: 10\nduration: 10m\ntier: %s\n", testModule, gpus, tier))
	if err != nil {
		t.Fatal(err)
	}
	nonce := make([]byte, 16)
	_, _ = rand.Read(nonce)
	rfq, err := spec.RFQ(r.self, nonce, r.now())
	if err != nil {
		t.Fatal(err)
	}
	raw, err := auction.SealRFQ(rfq, r.auctioneer.key)
	if err != nil {
		t.Fatal(err)
	}
	return spec, rfq, attest.RecordID(raw).String()
}

// bid seals provider f's bid of gpus GPUs at price USD/GPU-h, from de.
func bid(t *testing.T, f *fakeProvider, rfq *auction.RFQ, rfqID string, gpus int, price float64) (*auction.Bid, string) {
	t.Helper()
	return bidFrom(t, f, rfq, rfqID, gpus, price, "de")
}

// bidFrom is bid from the country region.
func bidFrom(t *testing.T, f *fakeProvider, rfq *auction.RFQ, rfqID string, gpus int, price float64, region string) (*auction.Bid, string) {
	t.Helper()
	now := f.Clock.Now()
	b := &auction.Bid{
		V: auction.MessagesVersion, Provider: f.ID.String(), RFQ: rfqID, JobCID: rfq.JobCID,
		PriceMicro: uint64(price * 1e6), Model: "h100-sxm-80gb", VRAMMiB: 81559, Region: region,
		EarliestStartMs: now.UnixMilli(), IssuedAtMs: now.UnixMilli(), ValidUntilMs: now.Add(time.Minute).UnixMilli(),
	}
	for i := range gpus {
		b.GPUs = append(b.GPUs, fmt.Sprintf("GPU-%s-%d", f.ID.String()[len(f.ID.String())-6:], i))
	}
	raw, err := auction.SealBid(b, f.Key)
	if err != nil {
		t.Fatal(err)
	}
	return b, attest.RecordID(raw).String()
}
