package auction

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	mh "github.com/multiformats/go-multihash"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/attest/golden"
)

// Renters sign with testKey(1), providers with testKey(2).
const (
	msgRenterSeed   = 1
	msgProviderSeed = 2
)

// msgRecordID is a stand-in record ID of the right form.
func msgRecordID(name string) string { return attest.RecordID([]byte(name)).String() }

func msgContentID(name string, codec uint64) string {
	sum, err := mh.Sum([]byte(name), mh.SHA2_256, -1)
	if err != nil {
		panic(err)
	}
	return cid.NewCidV1(codec, sum).String()
}

func msgPeer(t testing.TB, seed byte) string {
	_, id := testKey(t, seed)
	return id.String()
}

var (
	msgNonce    = []byte("0123456789abcdef")
	msgImage    = "ghcr.io/acme/train:2.3@sha256:" + strings.Repeat("3f1a9c0b", 8)
	msgDataset  = "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy"
	msgGPUUUIDs = []string{"GPU-8b7c1f2e-0000-4000-8000-000000000001", "GPU-8b7c1f2e-0000-4000-8000-000000000002"}
)

func msgRFQ(t testing.TB) *RFQ {
	return &RFQ{
		V: MessagesVersion, Renter: msgPeer(t, msgRenterSeed), JobCID: msgContentID("job", cid.DagCBOR),
		Nonce: bytes.Clone(msgNonce), IssuedAtMs: fixedNow.UnixMilli(),
		ExpiresAtMs: fixedNow.Add(10500 * time.Millisecond).UnixMilli(),
		Resources: Resources{GPUs: 2, Models: []string{"a100", "h100"}, MinVRAMMiB: 76294,
			MinComputeCap: "8.0", CPUCores: 16, RAMMiB: 64 << 10, DiskGiB: 200},
		Runtime: RuntimeDocker, Image: msgImage, Tier: TierBronze, MaxPriceMicro: 1_800_000,
		MinReliabilityPermille: 900, Regions: []string{"de", "fr"}, MaxRTTMs: 80,
		ExpectedDurationSec: 7200, MaxDurationSec: 14400, StartByMs: fixedNow.Add(time.Hour).UnixMilli(),
		BidWindowMs: 500, Datasets: []string{msgDataset}, Pricing: PaySecond, Egress: true, MinNoticeSec: 300,
		Addrs: []string{"/ip4/192.0.2.7/tcp/7401", "/ip6/2001:db8::7/udp/7401/quic-v1"},
	}
}

func msgBid(t testing.TB) *Bid {
	return &Bid{
		V: MessagesVersion, Provider: msgPeer(t, msgProviderSeed), RFQ: msgRecordID("rfq"),
		JobCID: msgContentID("job", cid.DagCBOR), PriceMicro: 1_650_000, GPUs: bytesCloneStrings(msgGPUUUIDs),
		Model: "h100-80gb", VRAMMiB: 81559, Region: "de", Datasets: []string{msgDataset},
		EarliestStartMs: fixedNow.Add(30 * time.Second).UnixMilli(), IssuedAtMs: fixedNow.Add(200 * time.Millisecond).UnixMilli(),
		ValidUntilMs: fixedNow.Add(2 * time.Minute).UnixMilli(), NoticeSec: 600,
	}
}

func msgAward(t testing.TB) *Award {
	return &Award{
		V: MessagesVersion, Renter: msgPeer(t, msgRenterSeed), Provider: msgPeer(t, msgProviderSeed),
		RFQ: msgRecordID("rfq"), Bid: msgRecordID("bid"), JobCID: msgContentID("job", cid.DagCBOR),
		GPUs: bytesCloneStrings(msgGPUUUIDs), PriceMicro: 1_700_000, Tier: TierBronze, MaxDurationSec: 14400,
		NoticeSec: 600, Part: 1, Parts: 2, Nonce: bytes.Clone(msgNonce),
		IssuedAtMs: fixedNow.Add(600 * time.Millisecond).UnixMilli(), ExpiresAtMs: fixedNow.Add(30 * time.Second).UnixMilli(),
	}
}

func msgAccept(t testing.TB) *LeaseAcceptance {
	return &LeaseAcceptance{V: MessagesVersion, Provider: msgPeer(t, msgProviderSeed), Award: msgRecordID("award"),
		GPUs: bytesCloneStrings(msgGPUUUIDs), AcceptedMs: fixedNow.Add(time.Second).UnixMilli(),
		StartsAtMs: fixedNow.Add(time.Second).UnixMilli()}
}

func msgDecline(t testing.TB) *Decline {
	return &Decline{V: MessagesVersion, Provider: msgPeer(t, msgProviderSeed), Award: msgRecordID("award"),
		Reason: "gpus no longer free", AtMs: fixedNow.Add(time.Second).UnixMilli()}
}

func msgPreempt(t testing.TB) *PreemptNotice {
	return &PreemptNotice{V: MessagesVersion, Provider: msgPeer(t, msgProviderSeed), Lease: msgRecordID("award"),
		NoticeSec: 600, IssuedAtMs: fixedNow.Add(time.Hour).UnixMilli(),
		EffectiveAtMs: fixedNow.Add(time.Hour + 10*time.Minute).UnixMilli(), Reason: "gold lease needs the gpus"}
}

// msgSummary reports the lease of msgAward, accepted by its provider.
func msgSummary(t testing.TB) *AwardSummary {
	awardEnv, acceptEnv := msgLease(t)
	s, err := SummaryOfLease(awardEnv, acceptEnv, "h100-80gb", []string{msgPeer(t, msgProviderSeed), msgPeer(t, 3)}, fixedNow.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// msgLease seals msgAward and the provider's acceptance of it.
func msgLease(t testing.TB) (awardEnv, acceptEnv []byte) {
	rkey, _ := testKey(t, msgRenterSeed)
	pkey, _ := testKey(t, msgProviderSeed)
	awardEnv, err := SealAward(msgAward(t), rkey)
	if err != nil {
		t.Fatal(err)
	}
	acc := msgAccept(t)
	acc.Award = attest.RecordID(awardEnv).String()
	if acceptEnv, err = SealLeaseAcceptance(acc, pkey); err != nil {
		t.Fatal(err)
	}
	return awardEnv, acceptEnv
}

// msgAbandon notes msgAward abandoned ten seconds after it was issued.
func msgAbandon(t testing.TB) *AbandonNote {
	awardEnv, _ := msgLease(t)
	n, err := NoteAbandoned(awardEnv, fixedNow.Add(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func bytesCloneStrings(xs []string) []string { return append([]string(nil), xs...) }

// msgKind ties one message type to its fixture, codec and limits, so every
// kind runs the same golden, round-trip, forgery and size tests.
type msgKind struct {
	golden    string // testdata/<golden>.golden
	fixture   func(testing.TB) auctionMessage
	seal      func(auctionMessage, crypto.PrivKey) ([]byte, error)
	open      func([]byte) (auctionMessage, peer.ID, error)
	ownerSeed byte
	limit     int
}

func wrapOpen[T any](f func([]byte) (*T, peer.ID, error)) func([]byte) (auctionMessage, peer.ID, error) {
	return func(raw []byte) (auctionMessage, peer.ID, error) {
		m, id, err := f(raw)
		if err != nil {
			return nil, id, err
		}
		return any(m).(auctionMessage), id, nil
	}
}

var msgKinds = []msgKind{
	{"rfq", func(t testing.TB) auctionMessage { return msgRFQ(t) },
		func(m auctionMessage, k crypto.PrivKey) ([]byte, error) { return SealRFQ(m.(*RFQ), k) },
		wrapOpen(OpenRFQ), msgRenterSeed, MaxRFQSize},
	{"bid", func(t testing.TB) auctionMessage { return msgBid(t) },
		func(m auctionMessage, k crypto.PrivKey) ([]byte, error) { return SealBid(m.(*Bid), k) },
		wrapOpen(OpenBid), msgProviderSeed, MaxBidSize},
	{"award", func(t testing.TB) auctionMessage { return msgAward(t) },
		func(m auctionMessage, k crypto.PrivKey) ([]byte, error) { return SealAward(m.(*Award), k) },
		wrapOpen(OpenAward), msgRenterSeed, MaxAwardSize},
	{"lease-acceptance", func(t testing.TB) auctionMessage { return msgAccept(t) },
		func(m auctionMessage, k crypto.PrivKey) ([]byte, error) {
			return SealLeaseAcceptance(m.(*LeaseAcceptance), k)
		},
		wrapOpen(OpenLeaseAcceptance), msgProviderSeed, MaxAcceptSize},
	{"decline", func(t testing.TB) auctionMessage { return msgDecline(t) },
		func(m auctionMessage, k crypto.PrivKey) ([]byte, error) { return SealDecline(m.(*Decline), k) },
		wrapOpen(OpenDecline), msgProviderSeed, MaxDeclineSize},
	{"preempt-notice", func(t testing.TB) auctionMessage { return msgPreempt(t) },
		func(m auctionMessage, k crypto.PrivKey) ([]byte, error) {
			return SealPreemptNotice(m.(*PreemptNotice), k)
		},
		wrapOpen(OpenPreemptNotice), msgProviderSeed, MaxPreemptSize},
	{"award-summary", func(t testing.TB) auctionMessage { return msgSummary(t) },
		func(m auctionMessage, k crypto.PrivKey) ([]byte, error) {
			return SealAwardSummary(m.(*AwardSummary), k)
		},
		wrapOpen(OpenAwardSummary), msgRenterSeed, MaxSummarySize},
	{"abandon-note", func(t testing.TB) auctionMessage { return msgAbandon(t) },
		func(m auctionMessage, k crypto.PrivKey) ([]byte, error) {
			return SealAbandonNote(m.(*AbandonNote), k)
		},
		wrapOpen(OpenAbandonNote), msgProviderSeed, MaxAbandonNoteSize},
}

// TestMessagesGolden pins the CBOR payload encoding of one fixed value of
// each kind: a change here is a wire-format change and needs a new version.
// Regenerate with: go test ./auction -run TestMessagesGolden -update
func TestMessagesGolden(t *testing.T) {
	for _, k := range msgKinds {
		t.Run(k.golden, func(t *testing.T) {
			m := k.fixture(t)
			if m.RecordKind().Name != k.golden {
				t.Fatalf("golden name %q is not the kind name %q", k.golden, m.RecordKind().Name)
			}
			payload, err := attest.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			got := hex.EncodeToString(payload) + "\n"
			golden.Check(t, filepath.Join("testdata", k.golden+".golden"), got)
			back := reflect.New(reflect.TypeOf(m).Elem()).Interface()
			if err := attest.Unmarshal(payload, back); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back, m) {
				t.Errorf("golden payload decodes to %+v", back)
			}
		})
	}
}

func TestMessagesRoundTrip(t *testing.T) {
	for _, k := range msgKinds {
		t.Run(k.golden, func(t *testing.T) {
			key, id := testKey(t, k.ownerSeed)
			in := k.fixture(t)
			raw, err := k.seal(in, key)
			if err != nil {
				t.Fatal(err)
			}
			out, signer, err := k.open(raw)
			if err != nil {
				t.Fatal(err)
			}
			if signer != id {
				t.Errorf("signer = %s, want %s", signer, id)
			}
			if !reflect.DeepEqual(in, out) {
				t.Errorf("round trip:\n got %+v\nwant %+v", out, in)
			}
			if again, err := k.seal(out, key); err != nil || !bytes.Equal(again, raw) {
				t.Errorf("re-sealing the opened message gave different bytes (err %v)", err)
			}
		})
	}
}

func TestSealMessageRefusesForeignKey(t *testing.T) {
	for _, k := range msgKinds {
		t.Run(k.golden, func(t *testing.T) {
			other, _ := testKey(t, 9)
			if _, err := k.seal(k.fixture(t), other); !errors.Is(err, ErrNotOwner) {
				t.Fatalf("seal with a foreign key: %v, want ErrNotOwner", err)
			}
		})
	}
}

func TestOpenMessageRejectsForgedAuthor(t *testing.T) {
	// Peer 9 signs a message naming another peer as its author: attest
	// accepts the signature, the Open functions must not.
	for _, k := range msgKinds {
		t.Run(k.golden, func(t *testing.T) {
			other, _ := testKey(t, 9)
			raw, err := attest.Seal(k.fixture(t), other)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := k.open(raw); !errors.Is(err, ErrNotOwner) {
				t.Fatalf("open forged: %v, want ErrNotOwner", err)
			}
		})
	}
}

func TestOpenMessageRejectsInvalidStructure(t *testing.T) {
	for _, k := range msgKinds {
		t.Run(k.golden, func(t *testing.T) {
			key, _ := testKey(t, k.ownerSeed)
			m := k.fixture(t)
			setInvalid(m)
			raw, err := attest.Seal(m, key) // bypasses the Seal function's validation
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = k.open(raw)
			if !errors.Is(err, ErrInvalidMessage) || !strings.Contains(err.Error(), k.golden+": ") {
				t.Fatalf("open invalid: %v", err)
			}
			if _, err := k.seal(m, key); !errors.Is(err, ErrInvalidMessage) {
				t.Fatalf("seal invalid: %v", err)
			}
		})
	}
}

// setInvalid breaks one structural rule in any message: every kind has a
// positive time field that must not be zero or negative.
func setInvalid(m auctionMessage) {
	v := reflect.ValueOf(m).Elem()
	for _, f := range []string{"IssuedAtMs", "AcceptedMs", "AtMs"} {
		if fv := v.FieldByName(f); fv.IsValid() {
			fv.SetInt(-1)
			return
		}
	}
	panic("no time field")
}

func TestOpenMessageRejectsOversize(t *testing.T) {
	for _, k := range msgKinds {
		t.Run(k.golden, func(t *testing.T) {
			if _, _, err := k.open(make([]byte, k.limit+1)); !errors.Is(err, attest.ErrTooLarge) {
				t.Fatalf("open oversize: %v, want attest.ErrTooLarge", err)
			}
		})
	}
}

func TestOpenMessageRejectsOtherKind(t *testing.T) {
	key, _ := testKey(t, msgProviderSeed)
	raw, err := SealBid(msgBid(t), key)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := OpenRFQ(raw); !errors.Is(err, attest.ErrWrongDomain) {
		t.Fatalf("OpenRFQ(bid): %v, want attest.ErrWrongDomain", err)
	}
}

func TestSealMessageNil(t *testing.T) {
	key, _ := testKey(t, 1)
	for name, err := range map[string]error{
		"rfq":     func() error { _, err := SealRFQ(nil, key); return err }(),
		"bid":     func() error { _, err := SealBid(nil, key); return err }(),
		"award":   func() error { _, err := SealAward(nil, key); return err }(),
		"accept":  func() error { _, err := SealLeaseAcceptance(nil, key); return err }(),
		"decline": func() error { _, err := SealDecline(nil, key); return err }(),
		"preempt": func() error { _, err := SealPreemptNotice(nil, key); return err }(),
		"summary": func() error { _, err := SealAwardSummary(nil, key); return err }(),
		"nil_key": func() error { _, err := SealRFQ(msgRFQ(t), nil); return err }(),
	} {
		if err == nil {
			t.Errorf("%s: sealed a nil", name)
		}
	}
}

// TestMessagesFitSizeLimits seals the largest messages real hardware
// produces (64 GPUs with NVML-style 40-character UUIDs, full RFQ lists) and
// checks they fit their kinds' limits.
func TestMessagesFitSizeLimits(t *testing.T) {
	rkey, _ := testKey(t, msgRenterSeed)
	pkey, _ := testKey(t, msgProviderSeed)
	uuids := make([]string, MaxGPUsPerHost)
	for i := range uuids {
		uuids[i] = fmt.Sprintf("GPU-8b7c1f2e-0000-4000-8000-%012d", i)
	}
	datasets := make([]string, MaxRFQDatasets)
	for i := range datasets {
		datasets[i] = msgContentID(fmt.Sprint(i), cid.Raw)
	}
	r := msgRFQ(t)
	r.Resources.Models, r.Regions, r.Datasets = nil, nil, datasets
	for i := range MaxRFQModels {
		r.Resources.Models = append(r.Resources.Models, fmt.Sprintf("model-%s-%02d", strings.Repeat("x", MaxModelLen-9), i))
	}
	for c := range countryCodes {
		if len(r.Regions) < MaxRFQRegions {
			r.Regions = append(r.Regions, c)
		}
	}
	r.Addrs = nil
	for i := range MaxRFQAddrs {
		r.Addrs = append(r.Addrs, fmt.Sprintf("/dns4/renter-%d.%s.example/udp/7401/quic-v1/p2p/%s", i, strings.Repeat("x", 120), r.Renter))
	}
	r.Image = strings.Repeat("a", maxImageRefLen-len("@sha256:")-64) + "@sha256:" + strings.Repeat("0", 64)
	b := msgBid(t)
	b.GPUs, b.Datasets = uuids, datasets
	a := msgAward(t)
	a.GPUs = uuids
	l := msgAccept(t)
	l.GPUs = uuids
	d := msgDecline(t)
	d.Reason = strings.Repeat("r", MaxReasonLen)
	n := msgPreempt(t)
	n.Reason = d.Reason
	for name, seal := range map[string]func() ([]byte, error){
		"rfq":     func() ([]byte, error) { return SealRFQ(r, rkey) },
		"bid":     func() ([]byte, error) { return SealBid(b, pkey) },
		"award":   func() ([]byte, error) { return SealAward(a, rkey) },
		"accept":  func() ([]byte, error) { return SealLeaseAcceptance(l, pkey) },
		"decline": func() ([]byte, error) { return SealDecline(d, pkey) },
		"preempt": func() ([]byte, error) { return SealPreemptNotice(n, pkey) },
		"summary": func() ([]byte, error) { return SealAwardSummary(msgSummary(t), rkey) },
	} {
		if _, err := seal(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestMessagesExpired(t *testing.T) {
	r, b, a := msgRFQ(t), msgBid(t), msgAward(t)
	for _, tc := range []struct {
		name    string
		expired func(time.Time) bool
		at      int64
	}{
		{"rfq", r.Expired, r.ExpiresAtMs},
		{"bid", b.Expired, b.ValidUntilMs},
		{"award", a.Expired, a.ExpiresAtMs},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.expired(time.UnixMilli(tc.at - 1)) {
				t.Error("expired 1 ms before its expiry")
			}
			if !tc.expired(time.UnixMilli(tc.at)) {
				t.Error("not expired at its expiry")
			}
		})
	}
}
