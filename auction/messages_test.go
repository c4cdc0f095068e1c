package auction

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	mh "github.com/multiformats/go-multihash"
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

func msgSummary(t testing.TB) *AwardSummary {
	return &AwardSummary{V: MessagesVersion, Renter: msgPeer(t, msgRenterSeed), Award: msgRecordID("award"), RFQ: msgRecordID("rfq"),
		Model: "h100-80gb", Tier: TierBronze, GPUs: 2, PriceMicro: 1_700_000, AtMs: fixedNow.Add(time.Second).UnixMilli()}
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
			path := filepath.Join("testdata", k.golden+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("read golden (run with -update to create): %v", err)
			}
			if got != string(want) {
				t.Errorf("%s encoding changed:\n got %s\nwant %s", k.golden, got, want)
			}
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

type vcase[T any] struct {
	name   string
	mutate func(T)
	want   string // substring of the error; "" = valid
}

func runValidateCases[T auctionMessage](t *testing.T, fixture func(testing.TB) T, cases []vcase[T]) {
	t.Helper()
	seen := map[string]bool{}
	for _, tc := range cases {
		if seen[tc.name] {
			t.Fatalf("duplicate case name %q", tc.name)
		}
		seen[tc.name] = true
		t.Run(tc.name, func(t *testing.T) {
			m := fixture(t)
			tc.mutate(m)
			err := m.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidMessage) {
				t.Fatalf("Validate = %v, want ErrInvalidMessage", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate = %q\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

func TestRFQValidate(t *testing.T) {
	hex64 := strings.Repeat("ab", 32)
	runValidateCases(t, msgRFQ, []vcase[*RFQ]{
		{"fixture_valid", func(*RFQ) {}, ""},
		{"wasm_cpu_only", func(r *RFQ) {
			r.Runtime, r.Image, r.Module = RuntimeWasm, "", msgContentID("module", cid.Raw)
			r.Resources = Resources{}
		}, ""},
		{"bad_version", func(r *RFQ) { r.V = 2 }, "rfq: v: version 2, want 1"},
		{"empty_renter", func(r *RFQ) { r.Renter = "" }, "renter: missing peer ID"},
		{"bad_renter", func(r *RFQ) { r.Renter = "12D3Koo" }, `renter: "12D3Koo" is not a peer ID`},
		{"bad_job_cid", func(r *RFQ) { r.JobCID = "job" }, `job: "job" is not a CID`},
		{"short_nonce", func(r *RFQ) { r.Nonce = r.Nonce[:8] }, "nonce: 8 bytes, want 16"},
		{"zero_issued", func(r *RFQ) { r.IssuedAtMs = 0 }, "issued_at_ms: must be positive"},
		{"expires_before_issue", func(r *RFQ) { r.ExpiresAtMs = r.IssuedAtMs }, "expires_at_ms: must be after issued_at_ms"},
		{"lifetime_too_long", func(r *RFQ) { r.ExpiresAtMs = r.IssuedAtMs + MaxRFQLifetimeMs + 1 }, "lifetime 10m0.001s exceeds 10m0s"},
		{"docker_cpu_only", func(r *RFQ) { r.Resources = Resources{CPUCores: 2, RAMMiB: 512} }, ""},
		{"docker_zero_gpus_with_models", func(r *RFQ) { r.Resources.GPUs = 0 }, "res: models, min_vram_mib and min_cc need gpus >= 1"},
		{"too_many_gpus", func(r *RFQ) { r.Resources.GPUs = 65 }, "res.gpus: 65 exceeds 64"},
		{"wasm_zero_gpus_with_models", func(r *RFQ) {
			r.Runtime, r.Image, r.Module = RuntimeWasm, "", msgContentID("module", cid.Raw)
			r.Resources.GPUs = 0
		}, "res: models, min_vram_mib and min_cc need gpus >= 1"},
		{"bad_model", func(r *RFQ) { r.Resources.Models = []string{"H100"} }, `res.models[0]: "H100" is not a model slug or family`},
		{"dup_model", func(r *RFQ) { r.Resources.Models = []string{"h100", "h100"} }, `res.models[1]: duplicate "h100"`},
		{"too_many_models", func(r *RFQ) { r.Resources.Models = make([]string, MaxRFQModels+1) }, "res.models: 33 entries, at most 32"},
		{"bad_cc", func(r *RFQ) { r.Resources.MinComputeCap = "9" }, `res.min_cc: compute capability "9" is not major.minor`},
		{"huge_vram", func(r *RFQ) { r.Resources.MinVRAMMiB = maxVRAMMiB + 1 }, "res.min_vram_mib: 4194305 exceeds"},
		{"unknown_runtime", func(r *RFQ) { r.Runtime = "podman" }, `runtime: "podman" is not a known runtime`},
		{"tag_only_image", func(r *RFQ) { r.Image = "pytorch/pytorch:2.3" }, `image: image "pytorch/pytorch:2.3" is not pinned by digest`},
		{"short_digest", func(r *RFQ) { r.Image = "ghcr.io/a/b@sha256:abc" }, "digest must be sha256: and 64 lower-case hex digits, got 3 characters"},
		{"upper_digest", func(r *RFQ) { r.Image = "ghcr.io/a/b@sha256:" + strings.ToUpper(hex64) }, "64 lower-case hex digits"},
		{"sha512_digest", func(r *RFQ) { r.Image = "ghcr.io/a/b@sha512:" + hex64 }, `digest "sha512:`},
		{"upper_repo", func(r *RFQ) { r.Image = "GHCR.io/a@sha256:" + hex64 }, `repository "GHCR.io/a" is not a lower-case image reference`},
		{"upper_tag_ok", func(r *RFQ) { r.Image = "ghcr.io/a:V1@sha256:" + hex64 }, ""},
		{"docker_with_module", func(r *RFQ) { r.Module = msgContentID("module", cid.Raw) }, "module: must be empty for the docker runtime"},
		{"wasm_without_module", func(r *RFQ) { r.Runtime = RuntimeWasm }, "module: missing CID"},
		{"bad_tier", func(r *RFQ) { r.Tier = "platinum" }, `tier: "platinum" is not gold, silver or bronze`},
		{"zero_price", func(r *RFQ) { r.MaxPriceMicro = 0 }, "max_price: 0 uUSD out of range 1..10000000000"},
		{"reliability_over_1000", func(r *RFQ) { r.MinReliabilityPermille = 1001 }, "min_rel: 1001 permille exceeds 1000"},
		{"bad_region", func(r *RFQ) { r.Regions = []string{"uk"} }, `regions[0]: "uk" is not a lower-case ISO 3166-1 alpha-2 code`},
		{"zero_expected", func(r *RFQ) { r.ExpectedDurationSec = 0 }, "expected_s: must be at least 1"},
		{"max_below_expected", func(r *RFQ) { r.MaxDurationSec = 60 }, "max_s: 60 is less than expected_s 7200"},
		{"start_before_issue", func(r *RFQ) { r.StartByMs = r.IssuedAtMs - 1 }, "start_by_ms: "},
		{"bid_window_short", func(r *RFQ) { r.BidWindowMs = 49 }, "bid_window_ms: 49 out of range 50..60000"},
		{"bid_window_long", func(r *RFQ) { r.BidWindowMs = 60_001 }, "bid_window_ms: 60001 out of range"},
		{"bid_window_outlasts_rfq", func(r *RFQ) { r.BidWindowMs = 20_000 }, "bid_window_ms: 20000 ms outlasts the RFQ"},
		{"bad_dataset", func(r *RFQ) { r.Datasets = []string{"x"} }, `datasets[0]: "x" is not a CID`},
		{"bad_pricing", func(r *RFQ) { r.Pricing = "vickrey" }, `pricing: "vickrey" is not first or second`},
		{"notice_on_gold", func(r *RFQ) { r.Tier = TierGold }, `min_notice_s: set on tier "gold"`},
		{"bad_addr", func(r *RFQ) { r.Addrs = []string{"192.0.2.7:7401"} }, `addrs[0]: "192.0.2.7:7401" is not a multiaddr`},
		{"too_many_addrs", func(r *RFQ) { r.Addrs = make([]string, MaxRFQAddrs+1) }, "addrs: 9 entries, at most 8"},
		{"reports_all_problems", func(r *RFQ) { r.Nonce = nil; r.Pricing = "" }, `nonce: 0 bytes, want 16; `},
	})
}

func TestBidValidate(t *testing.T) {
	runValidateCases(t, msgBid, []vcase[*Bid]{
		{"fixture_valid", func(*Bid) {}, ""},
		{"bad_provider", func(b *Bid) { b.Provider = "nope" }, `bid: provider: "nope" is not a peer ID`},
		{"rfq_not_record_id", func(b *Bid) { b.RFQ = msgContentID("rfq", cid.DagCBOR) }, "rfq: \"bafy"},
		{"rfq_not_canonical", func(b *Bid) {
			c, _ := cid.Decode(b.RFQ)
			s, _ := c.StringOfBase('z')
			b.RFQ = s
		}, "is not the canonical CID form"},
		{"empty_rfq", func(b *Bid) { b.RFQ = "" }, "rfq: missing record ID"},
		{"zero_price", func(b *Bid) { b.PriceMicro = 0 }, "price: 0 uUSD"},
		{"no_gpus", func(b *Bid) { b.GPUs = nil }, `gpus: empty: only a CPU-only bid (model "cpu", no vram_mib) offers no GPU`},
		{"cpu_only", func(b *Bid) { b.GPUs, b.Model, b.VRAMMiB = nil, CPUModel, 0 }, ""},
		{"cpu_only_with_vram", func(b *Bid) { b.GPUs, b.Model = nil, CPUModel }, "gpus: empty: only a CPU-only bid"},
		{"too_many_gpus", func(b *Bid) { b.GPUs = make([]string, 65) }, "gpus: 65 entries, want 1..64"},
		{"dup_gpu", func(b *Bid) { b.GPUs[1] = b.GPUs[0] }, `gpus[1]: duplicate "GPU-8b7c1f2e`},
		{"empty_gpu", func(b *Bid) { b.GPUs[0] = "" }, `gpus[0]: "" is not a GPU UUID`},
		{"bad_model", func(b *Bid) { b.Model = "H100 80GB" }, `model: "H100 80GB" is not a model slug`},
		{"zero_vram", func(b *Bid) { b.VRAMMiB = 0 }, "vram_mib: 0 out of range"},
		{"bad_region", func(b *Bid) { b.Region = "DE" }, `region: "DE" is not a lower-case`},
		{"valid_until_before_issue", func(b *Bid) { b.ValidUntilMs = b.IssuedAtMs }, "valid_until_ms: must be after issued_at_ms"},
		{"valid_too_long", func(b *Bid) { b.ValidUntilMs = b.IssuedAtMs + MaxBidLifetimeMs + 1 }, "valid_until_ms: lifetime"},
		{"start_before_issue", func(b *Bid) { b.EarliestStartMs = b.IssuedAtMs - 1 }, "earliest_start_ms: "},
	})
}

func TestAwardValidate(t *testing.T) {
	runValidateCases(t, msgAward, []vcase[*Award]{
		{"fixture_valid", func(*Award) {}, ""},
		{"silver_without_notice", func(a *Award) { a.Tier, a.NoticeSec = TierSilver, 0 }, ""},
		{"bad_renter", func(a *Award) { a.Renter = "" }, "award: renter: missing peer ID"},
		{"bad_provider", func(a *Award) { a.Provider = "x" }, `provider: "x" is not a peer ID`},
		{"bad_bid", func(a *Award) { a.Bid = "x" }, `bid: "x" is not a CID`},
		{"bad_job", func(a *Award) { a.JobCID = "" }, "job: missing CID"},
		{"dup_gpu", func(a *Award) { a.GPUs[1] = a.GPUs[0] }, "gpus[1]: duplicate"},
		{"zero_price", func(a *Award) { a.PriceMicro = 0 }, "price: 0 uUSD"},
		{"bad_tier", func(a *Award) { a.Tier = "" }, `tier: "" is not gold`},
		{"zero_max_duration", func(a *Award) { a.MaxDurationSec = 0 }, "max_s: must be at least 1"},
		{"notice_on_silver", func(a *Award) { a.Tier = TierSilver }, `notice_s: set on tier "silver"`},
		{"part_zero", func(a *Award) { a.Part = 0 }, "part: 0 out of range 1..2 (parts)"},
		{"part_over_parts", func(a *Award) { a.Part = 3 }, "part: 3 out of range 1..2"},
		{"parts_zero", func(a *Award) { a.Parts = 0 }, "parts: 0 out of range 1..64"},
		{"long_nonce", func(a *Award) { a.Nonce = make([]byte, 17) }, "nonce: 17 bytes, want 16"},
		{"lifetime_too_long", func(a *Award) { a.ExpiresAtMs = a.IssuedAtMs + MaxAwardLifetimeMs + 1 }, "expires_at_ms: lifetime"},
	})
}

func TestLeaseAcceptanceValidate(t *testing.T) {
	runValidateCases(t, msgAccept, []vcase[*LeaseAcceptance]{
		{"fixture_valid", func(*LeaseAcceptance) {}, ""},
		{"bad_version", func(l *LeaseAcceptance) { l.V = 0 }, "lease-acceptance: v: version 0"},
		{"bad_award", func(l *LeaseAcceptance) { l.Award = "" }, "award: missing record ID"},
		{"cpu_only", func(l *LeaseAcceptance) { l.GPUs = nil }, ""},
		{"too_many_gpus", func(l *LeaseAcceptance) { l.GPUs = make([]string, 65) }, "gpus: 65 entries"},
		{"zero_time", func(l *LeaseAcceptance) { l.AcceptedMs = 0 }, "accepted_ms: must be positive"},
	})
}

func TestDeclineValidate(t *testing.T) {
	runValidateCases(t, msgDecline, []vcase[*Decline]{
		{"fixture_valid", func(*Decline) {}, ""},
		{"bad_provider", func(d *Decline) { d.Provider = "" }, "decline: provider: missing peer ID"},
		{"empty_reason", func(d *Decline) { d.Reason = "" }, "reason: must be 1..256 printable ASCII"},
		{"control_in_reason", func(d *Decline) { d.Reason = "busy\x1b[2J" }, "reason: must be 1..256"},
		{"long_reason", func(d *Decline) { d.Reason = strings.Repeat("x", 257) }, "reason: must be 1..256"},
		{"zero_time", func(d *Decline) { d.AtMs = 0 }, "at_ms: must be positive"},
	})
}

func TestPreemptNoticeValidate(t *testing.T) {
	runValidateCases(t, msgPreempt, []vcase[*PreemptNotice]{
		{"fixture_valid", func(*PreemptNotice) {}, ""},
		{"zero_notice_immediate", func(n *PreemptNotice) { n.NoticeSec, n.EffectiveAtMs = 0, n.IssuedAtMs }, ""},
		{"bad_lease", func(n *PreemptNotice) { n.Lease = "lease-1" }, `preempt-notice: lease: "lease-1" is not a CID`},
		{"short_notice", func(n *PreemptNotice) { n.EffectiveAtMs -= 1 }, "effective_at_ms: gives 9m59.999s notice, less than notice_s 600"},
		{"effective_before_issue", func(n *PreemptNotice) { n.EffectiveAtMs = n.IssuedAtMs - 1 }, "effective_at_ms: must not be before"},
		{"zero_issued", func(n *PreemptNotice) { n.IssuedAtMs = 0 }, "issued_at_ms: must be positive"},
		{"empty_reason", func(n *PreemptNotice) { n.Reason = "" }, "reason: must be"},
	})
}

func TestAwardSummaryValidate(t *testing.T) {
	runValidateCases(t, msgSummary, []vcase[*AwardSummary]{
		{"fixture_valid", func(*AwardSummary) {}, ""},
		{"bad_renter", func(s *AwardSummary) { s.Renter = "x" }, `award-summary: renter: "x" is not a peer ID`},
		{"bad_award", func(s *AwardSummary) { s.Award = "x" }, `award: "x" is not a CID`},
		{"family_not_model", func(s *AwardSummary) { s.Model = "" }, `model: "" is not a model slug`},
		{"bad_tier", func(s *AwardSummary) { s.Tier = "Gold" }, `tier: "Gold" is not gold`},
		{"zero_gpus", func(s *AwardSummary) { s.GPUs = 0 }, "gpus: 0 out of range 1..64"},
		{"price_too_high", func(s *AwardSummary) { s.PriceMicro = MaxPriceUUSD + 1 }, "price: 10000000001 uUSD out of range"},
		{"zero_time", func(s *AwardSummary) { s.AtMs = 0 }, "at_ms: must be positive"},
	})
}

func TestPeerIDMustBeCanonical(t *testing.T) {
	s := msgSummary(t)
	id, _ := peer.Decode(s.Renter)
	// The same peer as a CIDv1 (libp2p-key) is decodable but not canonical.
	s.Renter = peer.ToCid(id).String()
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "is not the canonical peer ID form") {
		t.Fatalf("Validate = %v", err)
	}
}

func TestSeenCache(t *testing.T) {
	at := func(ms int64) time.Time { return fixedNow.Add(time.Duration(ms) * time.Millisecond) }
	exp := func(ms int64) int64 { return fixedNow.UnixMilli() + ms }
	type op struct {
		id     string
		expMs  int64 // relative to fixedNow
		nowMs  int64 // relative to fixedNow
		seen   bool  // want
		lenNow int   // want Len after the op
	}
	for _, tc := range []struct {
		name string
		max  int
		ops  []op
	}{
		{"first_sight_then_replay", 4, []op{
			{"a", 1000, 0, false, 1}, {"a", 1000, 10, true, 1}, {"b", 1000, 20, false, 2},
		}},
		{"forgotten_after_expiry", 4, []op{
			{"a", 1000, 0, false, 1}, {"a", 1000, 999, true, 1},
			// At its expiry the entry is dropped; the caller's own expiry
			// check rejects the message from then on.
			{"a", 1000, 1000, false, 0},
		}},
		{"expired_on_arrival_not_recorded", 4, []op{
			{"a", 100, 100, false, 0}, {"a", 100, 100, false, 0},
		}},
		{"expired_entries_swept", 4, []op{
			{"a", 100, 0, false, 1}, {"b", 200, 0, false, 2}, {"c", 5000, 0, false, 3},
			{"d", 5000, 300, false, 2},
		}},
		{"full_evicts_soonest_to_expire", 2, []op{
			{"long", 9000, 0, false, 1}, {"short", 1000, 0, false, 2},
			{"new", 5000, 10, false, 2}, // evicts "short"
			{"long", 9000, 20, true, 2},
			{"new", 5000, 30, true, 2},
			{"short", 1000, 40, false, 2}, // forgotten: recorded again, evicting "new"
			{"new", 5000, 50, false, 2},
		}},
		{"capacity_one", 1, []op{
			{"a", 1000, 0, false, 1}, {"b", 1000, 0, false, 1}, {"a", 1000, 0, false, 1}, {"a", 1000, 0, true, 1},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewSeenCache(tc.max)
			for i, o := range tc.ops {
				if got := c.Seen(o.id, exp(o.expMs), at(o.nowMs)); got != o.seen {
					t.Errorf("op %d Seen(%q) = %v, want %v", i, o.id, got, o.seen)
				}
				if got := c.Len(); got != o.lenNow {
					t.Errorf("op %d Len = %d, want %d", i, got, o.lenNow)
				}
			}
		})
	}
}

func TestSeenCacheBounded(t *testing.T) {
	c := NewSeenCache(100)
	for i := range 10_000 {
		c.Seen(fmt.Sprint(i), fixedNow.UnixMilli()+int64(i%977)+1, fixedNow)
		if c.Len() > 100 {
			t.Fatalf("Len = %d after %d inserts", c.Len(), i+1)
		}
	}
}

func TestNewSeenCachePanicsOnZero(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("NewSeenCache(0) did not panic")
		}
	}()
	NewSeenCache(0)
}

// TestSeenCacheConcurrent: gossipsub runs validators concurrently; run with
// -race. Exactly one of many concurrent sightings of an ID is first.
func TestSeenCacheConcurrent(t *testing.T) {
	c := NewSeenCache(1000)
	firsts := make(chan bool, 64)
	for range 64 {
		go func() { firsts <- !c.Seen("rfq-1", fixedNow.UnixMilli()+1000, fixedNow) }()
	}
	n := 0
	for range 64 {
		if <-firsts {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d goroutines saw the ID first, want 1", n)
	}
}
