package auction

import (
	"errors"
	"strings"
	"testing"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
)

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
		{"terms_v2", func(b *Bid) {
			b.SetTerms(LeaseTerms{WindowMs: 500, VoucherMs: 250, GraceMs: 750, EnergyTolPermille: 150, MaxSkewMs: 1000})
		}, ""},
		{"terms_in_v1", func(b *Bid) { b.Terms = &LeaseTerms{} }, "terms: set in a version 1 record"},
		{"v2_without_terms", func(b *Bid) { b.V = TermsVersion }, "terms: missing in a version 2 record"},
		{"terms_out_of_bounds", func(b *Bid) {
			b.V, b.Terms = TermsVersion, &LeaseTerms{WindowMs: 50, VoucherMs: MaxTermsPeriodMs + 1, GraceMs: MaxTermsGraceMs + 1, Prepay: 101, MaxSkewMs: 0}
		},
			"terms.window_ms: 50 out of range 100..600000; terms.voucher_ms: 600001 out of range 100..600000; terms.grace_ms: 600001 exceeds 600000; terms.prepay: 101 exceeds 100; terms.energy_tol_permille: 0 out of range 1..1000; terms.max_skew_ms: 0 out of range 1..600000"},
		{"version_3", func(b *Bid) { b.V = 3 }, "v: version 3, want 1 or 2"},
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
		{"terms_v2", func(a *Award) {
			a.SetTerms(LeaseTerms{WindowMs: 500, VoucherMs: 250, GraceMs: 750, EnergyTolPermille: 150, MaxSkewMs: 1000})
		}, ""},
		{"default_terms_stay_v1", func(a *Award) { a.SetTerms(DefaultLeaseTerms) }, ""},
		{"v2_without_terms", func(a *Award) { a.V = TermsVersion }, "terms: missing in a version 2 record"},
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
		{"bad_provider", func(s *AwardSummary) { s.Provider = "x" }, `provider: "x" is not a peer ID`},
		{"provider_is_renter", func(s *AwardSummary) { s.Provider = s.Renter }, "provider: is the renter"},
		{"no_award_env", func(s *AwardSummary) { s.AwardEnv = nil }, "award_env: 0 bytes"},
		{"huge_accept_env", func(s *AwardSummary) { s.AcceptEnv = make([]byte, MaxEndorsedAcceptSize+1) }, "accept_env: 4097 bytes"},
		{"bidders_unsorted", func(s *AwardSummary) { s.Bidders = []string{s.Bidders[1], s.Bidders[0]} }, "bidders: not sorted and unique"},
		{"bidder_not_a_peer", func(s *AwardSummary) { s.Bidders = []string{"x"} }, `bidders[0]: "x" is not a peer ID`},
	})
}

// TestAwardSummaryNeedsItsLease: a summary opens only when the lease it
// carries says what it says, signed by both parties; a renter alone
// cannot report a price nobody accepted.
func TestAwardSummaryNeedsItsLease(t *testing.T) {
	rkey, _ := testKey(t, msgRenterSeed)
	pkey, _ := testKey(t, msgProviderSeed)
	otherKey, other := testKey(t, 9)
	for _, tc := range []struct {
		name  string
		edit  func(t *testing.T, s *AwardSummary)
		wants string
	}{
		{"honest", func(*testing.T, *AwardSummary) {}, ""},
		{"price raised", func(_ *testing.T, s *AwardSummary) { s.PriceMicro *= 2 }, "price differ"},
		{"tier changed", func(_ *testing.T, s *AwardSummary) { s.Tier = TierGold }, "price differ"},
		{"more gpus", func(_ *testing.T, s *AwardSummary) { s.GPUs = 3 }, "for 3 GPUs"},
		{"another award id", func(_ *testing.T, s *AwardSummary) { s.Award = msgRecordID("other") }, "is not record"},
		{"another provider named", func(_ *testing.T, s *AwardSummary) { s.Provider = other.String() }, "other parties"},
		{"acceptance by a stranger", func(t *testing.T, s *AwardSummary) {
			acc := msgAccept(t)
			acc.Provider, acc.Award = other.String(), s.Award
			s.AcceptEnv = sealOrFatal(t, func() ([]byte, error) { return SealLeaseAcceptance(acc, otherKey) })
		}, "is not of this award"},
		{"acceptance of another award", func(t *testing.T, s *AwardSummary) {
			acc := msgAccept(t)
			s.AcceptEnv = sealOrFatal(t, func() ([]byte, error) { return SealLeaseAcceptance(acc, pkey) })
		}, "is not of this award"},
		{"award not sealed", func(_ *testing.T, s *AwardSummary) { s.AwardEnv = []byte("garbage") }, "award:"},
		{"acceptance swapped for the award", func(_ *testing.T, s *AwardSummary) { s.AcceptEnv = s.AwardEnv }, "acceptance:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := msgSummary(t)
			tc.edit(t, s)
			raw, err := SealAwardSummary(s, rkey)
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = OpenAwardSummary(raw)
			switch {
			case tc.wants == "" && err != nil:
				t.Fatalf("honest summary refused: %v", err)
			case tc.wants != "" && (!errors.Is(err, ErrSummaryUnbacked) || !strings.Contains(err.Error(), tc.wants)):
				t.Fatalf("OpenAwardSummary = %v, want ErrSummaryUnbacked with %q", err, tc.wants)
			}
		})
	}
}

func sealOrFatal(t *testing.T, seal func() ([]byte, error)) []byte {
	t.Helper()
	raw, err := seal()
	if err != nil {
		t.Fatal(err)
	}
	return raw
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
