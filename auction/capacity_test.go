package auction

import (
	"encoding/hex"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/attest/golden"
)

// TestCapacityGolden pins the CBOR payload encoding of a fixed record: a
// change here is a wire-format change and needs a new version.
func TestCapacityGolden(t *testing.T) {
	payload, err := attest.Marshal(fixtureCapacity(t, 1))
	if err != nil {
		t.Fatal(err)
	}
	got := hex.EncodeToString(payload) + "\n"
	golden.Check(t, filepath.Join("testdata", "capacity.golden"), got)
	var back Capacity
	if err := attest.Unmarshal(payload, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&back, fixtureCapacity(t, 1)) {
		t.Errorf("golden payload decodes to %+v", back)
	}
}

func TestCapacityRoundTrip(t *testing.T) {
	key, id := testKey(t, 1)
	in := fixtureCapacity(t, 1)
	raw := mustSealCapacity(t, in, key)
	if len(raw) > MaxCapacitySize {
		t.Fatalf("fixture envelope is %d bytes", len(raw))
	}
	out, signer, err := OpenCapacity(raw)
	if err != nil {
		t.Fatal(err)
	}
	if signer != id {
		t.Errorf("signer = %s, want %s", signer, id)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("round trip:\n got %+v\nwant %+v", out, in)
	}
	if again := mustSealCapacity(t, out, key); string(again) != string(raw) {
		t.Error("re-sealing the opened record gave different bytes")
	}
}

func TestSealCapacityRefusesForeignPeer(t *testing.T) {
	key, _ := testKey(t, 2)
	_, err := SealCapacity(fixtureCapacity(t, 1), key)
	if !errors.Is(err, ErrNotOwner) {
		t.Fatalf("SealCapacity with another key: %v, want ErrNotOwner", err)
	}
}

func TestOpenCapacityRejectsForgedPeerField(t *testing.T) {
	// Peer 2 signs a record claiming to be peer 1: attest accepts the
	// signature, OpenCapacity must not.
	key2, _ := testKey(t, 2)
	raw, err := attest.Seal(fixtureCapacity(t, 1), key2)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = OpenCapacity(raw)
	if !errors.Is(err, ErrNotOwner) {
		t.Fatalf("OpenCapacity forged: %v, want ErrNotOwner", err)
	}
}

func TestOpenCapacityRejectsInvalidStructure(t *testing.T) {
	key, _ := testKey(t, 1)
	c := fixtureCapacity(t, 1)
	c.Region.Country = "uk"
	raw, err := attest.Seal(c, key) // bypasses SealCapacity's validation
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = OpenCapacity(raw)
	if !errors.Is(err, ErrInvalidCapacity) || !strings.Contains(err.Error(), `region.country: "uk"`) {
		t.Fatalf("OpenCapacity: %v", err)
	}
}

func TestOpenCapacityRejectsOversize(t *testing.T) {
	_, _, err := OpenCapacity(make([]byte, MaxCapacitySize+1))
	if !errors.Is(err, attest.ErrTooLarge) {
		t.Fatalf("OpenCapacity oversize: %v, want attest.ErrTooLarge", err)
	}
}

func TestCapacityValidate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(c *Capacity)
		want   string // substring of the error; "" = valid
	}{
		{"fixture_valid", func(*Capacity) {}, ""},
		{"cpu_only_wasm_provider", func(c *Capacity) { c.GPUs = nil; c.Runtimes = []string{RuntimeWasm} }, ""},
		{"bad_version", func(c *Capacity) { c.V = 2 }, "v: version 2"},
		{"bad_peer", func(c *Capacity) { c.Peer = "nope" }, `peer: "nope" is not a peer ID`},
		{"zero_seq", func(c *Capacity) { c.Seq = 0 }, "seq: must be at least 1"},
		{"expiry_before_issue", func(c *Capacity) { c.ExpiresAtMs = c.IssuedAtMs }, "expires_at_ms: must be after"},
		{"ttl_too_long", func(c *Capacity) { c.ExpiresAtMs = c.IssuedAtMs + 25*3600*1000 }, "lifetime 25h0m0s exceeds 24h0m0s"},
		{"nothing_offered", func(c *Capacity) { c.GPUs = nil; c.Runtimes = nil }, "neither GPUs nor runtimes"},
		{"dup_gpu_index", func(c *Capacity) { c.GPUs[1].Index = 0 }, "gpus[1].index: duplicate index 0"},
		{"dup_gpu_uuid", func(c *Capacity) { c.GPUs[1].UUID = c.GPUs[0].UUID }, "gpus[1].uuid: duplicate UUID"},
		{"model_not_slug", func(c *Capacity) { c.GPUs[0].Model = "H100 80GB" }, `gpus[0].model: "H100 80GB" is not a model slug`},
		{"zero_vram", func(c *Capacity) { c.GPUs[0].VRAMMiB = 0 }, "gpus[0].vram_mib: 0 out of range"},
		{"bad_compute_cap", func(c *Capacity) { c.GPUs[0].ComputeCap = "9" }, `gpus[0].compute_cap: compute capability "9" is not major.minor`},
		{"free_with_lease", func(c *Capacity) { c.GPUs[0].LeaseID = "x" }, "gpus[0].lease_id: a free GPU cannot carry a lease"},
		{"held_free_gpu", func(c *Capacity) { c.GPUs[0].Free, c.GPUs[0].Held = true, true }, ""},
		{"held_leased_gpu", func(c *Capacity) { c.GPUs[0].Free, c.GPUs[0].Held, c.GPUs[0].LeaseID = false, true, "x" }, "gpus[0].held: only a free GPU"},
		{"zero_cpu", func(c *Capacity) { c.Host.CPUCores = 0 }, "host.cpu_cores: 0 out of range"},
		{"upper_case_country", func(c *Capacity) { c.Region.Country = "DE" }, `region.country: "DE" is not a lower-case ISO`},
		{"bad_zone", func(c *Capacity) { c.Region.Zone = "Fra 1" }, `region.zone: "Fra 1" is not a slug`},
		{"bad_reachability", func(c *Capacity) { c.Reachability = "open" }, `reachability: "open" is not public`},
		{"unknown_runtime", func(c *Capacity) { c.Runtimes = []string{"podman"} }, `runtimes[0]: "podman" is not a known runtime`},
		{"dup_runtime", func(c *Capacity) { c.Runtimes = []string{"wasm", "wasm"} }, `runtimes[1]: duplicate "wasm"`},
		{"no_tiers", func(c *Capacity) { c.Policy.Tiers = nil }, "policy.tiers: must accept at least one tier"},
		{"unknown_tier", func(c *Capacity) { c.Policy.Tiers = []Tier{"platinum"} }, `policy.tiers[0]: "platinum" is not gold`},
		{"accepted_tier_without_floor", func(c *Capacity) { c.Floor.Silver = 0 }, "floor.silver: tier is accepted but has no floor price"},
		{"floor_too_high", func(c *Capacity) { c.Floor.Gold = 20_000_000_000 }, "floor.gold: 20000000000 uUSD exceeds"},
		{"bad_image_pattern", func(c *Capacity) { c.Policy.AllowedImages = []string{"sha256:XYZ"} }, `policy.allowed_images[0]: "sha256:XYZ"`},
		{"calendar_bad_day", func(c *Capacity) { c.Calendar[0].Day = 7 }, "calendar[0].day: 7 is not"},
		{"calendar_bad_range", func(c *Capacity) { c.Calendar[0].EndMin = 1441 }, "calendar[0]: minutes [0, 1441)"},
		{"calendar_overlap", func(c *Capacity) { c.Calendar[1].StartMin = 60 }, "calendar[1]: overlaps calendar[0]"},
		{"calendar_zero_factor", func(c *Capacity) { c.Calendar[0].FactorPermille = 0 }, "calendar[0].factor_permille: 0 out of range"},
		{"bad_dataset", func(c *Capacity) { c.Datasets = []string{"not-a-cid"} }, `datasets[0]: "not-a-cid" is not a CID`},
		{"bad_fingerprint", func(c *Capacity) { c.FingerprintID = "x" }, `fingerprint_id: "x" is not a CID`},
		{"empty_version", func(c *Capacity) { c.Version = "" }, "version: must be 1..128 printable"},
		{"reports_all_problems", func(c *Capacity) { c.Seq = 0; c.Host.CPUCores = 0 }, "seq: must be at least 1; host.cpu_cores"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := fixtureCapacity(t, 1)
			tc.mutate(c)
			err := c.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidCapacity) {
				t.Fatalf("Validate = %v, want ErrInvalidCapacity", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate = %q, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestWindowAt(t *testing.T) {
	c := fixtureCapacity(t, 1)
	monday7 := time.Date(2026, 3, 2, 7, 59, 0, 0, time.UTC) // a Monday
	for _, tc := range []struct {
		name   string
		at     time.Time
		factor uint32
		open   bool
	}{
		{"off_peak", monday7, 800, true},
		{"peak_boundary", monday7.Add(time.Minute), 1200, true},
		{"closed_tuesday", monday7.Add(24 * time.Hour), 0, false},
		{"non_utc_input", monday7.In(time.FixedZone("x", 3600)), 800, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, open := c.WindowAt(tc.at)
			if f != tc.factor || open != tc.open {
				t.Errorf("WindowAt = %d, %v; want %d, %v", f, open, tc.factor, tc.open)
			}
		})
	}
	c.Calendar = nil
	if f, open := c.WindowAt(monday7); f != 1000 || !open {
		t.Errorf("empty calendar: %d, %v", f, open)
	}
}

func FuzzOpenCapacity(f *testing.F) {
	key, _ := testKey(f, 1)
	f.Add(mustSealCapacity(f, fixtureCapacity(f, 1), key))
	small := fixtureCapacity(f, 1)
	small.GPUs, small.Calendar, small.Datasets = nil, nil, nil
	f.Add(mustSealCapacity(f, small, key))
	warm := fixtureCapacity(f, 1)
	warm.Models = []string{testModelID}
	f.Add(mustSealCapacity(f, warm, key))
	forged, _ := attest.Seal(fixtureCapacity(f, 2), key)
	f.Add(forged)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, signer, err := OpenCapacity(raw)
		if err != nil {
			return
		}
		if c.Peer != signer.String() {
			t.Fatal("accepted a record whose peer is not its signer")
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("accepted an invalid record: %v", err)
		}
		_ = CapabilityKeys(c)
	})
}
