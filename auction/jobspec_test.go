package auction

import (
	"bytes"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ipfs/go-cid"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/attest/golden"
)

const (
	specDigest = "sha256:3f1a9c0b3f1a9c0b3f1a9c0b3f1a9c0b3f1a9c0b3f1a9c0b3f1a9c0b3f1a9c0b"
	specImage  = "ghcr.io/acme/train:2.3@" + specDigest
	specModule = "bafkreiasbfynqeudn4myrbrflb5embvfvur454y4q2comalxcvjfjd6gxe"
	// specBase is the smallest valid docker spec; cases append to it.
	specBase = "image: " + specImage + "\nmax_price: 1.80\nduration: 2h\n"
)

func readSpec(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "jobspec", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustParseSpec(t testing.TB, yaml string) *JobSpec {
	t.Helper()
	s, err := ParseJobSpec([]byte(yaml))
	if err != nil {
		t.Fatalf("ParseJobSpec: %v", err)
	}
	return s
}

func specRFQ(t testing.TB, s *JobSpec) *RFQ {
	t.Helper()
	_, renter := testKey(t, msgRenterSeed)
	r, err := s.RFQ(renter, msgNonce, fixedNow)
	if err != nil {
		t.Fatalf("RFQ: %v", err)
	}
	return r
}

func specCID(t testing.TB, s *JobSpec) string {
	t.Helper()
	c, err := s.CID()
	if err != nil {
		t.Fatalf("CID: %v", err)
	}
	return c.String()
}

// TestJobSpecFull checks every field of the documented example end to end:
// YAML in, RFQ out, in the RFQ's units.
func TestJobSpecFull(t *testing.T) {
	s := mustParseSpec(t, string(readSpec(t, "full.yaml")))
	_, renter := testKey(t, msgRenterSeed)
	want := &RFQ{
		V: MessagesVersion, Renter: renter.String(), JobCID: specCID(t, s), Nonce: msgNonce,
		IssuedAtMs: fixedNow.UnixMilli(), ExpiresAtMs: fixedNow.Add(750*time.Millisecond + RFQExpiryMargin).UnixMilli(),
		Resources: Resources{GPUs: 1, Models: []string{"a100", "h100"}, MinVRAMMiB: 40 << 10, MinComputeCap: "8.0",
			CPUCores: 8, RAMMiB: 64 << 10, DiskGiB: 187}, // 200 GB = 186.3 GiB, rounded up
		Runtime: RuntimeDocker, Image: specImage, Tier: TierBronze, MaxPriceMicro: 1_800_000,
		MinReliabilityPermille: 900, Regions: []string{"de", "fr"}, MaxRTTMs: 80,
		ExpectedDurationSec: 7200, MaxDurationSec: 10800, StartByMs: fixedNow.Add(30 * time.Minute).UnixMilli(),
		BidWindowMs: 750, Datasets: []string{msgDataset}, Pricing: PaySecond, Egress: true, MinNoticeSec: 300,
	}
	if got := specRFQ(t, s); !reflect.DeepEqual(got, want) {
		t.Errorf("RFQ:\n got %+v\nwant %+v", got, want)
	}
	if s.Name != "llama-finetune-7b" || !reflect.DeepEqual(s.Command, []string{"python", "train.py", "--epochs", "3"}) ||
		!reflect.DeepEqual(s.Env, map[string]string{"HF_HUB_OFFLINE": "1", "WANDB_MODE": "offline"}) {
		t.Errorf("spec: %+v", s)
	}
}

// TestJobSpecGolden pins the canonical encoding the job CID hashes: a
// change here changes every job's CID and needs a new JobSpecVersion.
// Regenerate with: go test ./auction -run TestJobSpecGolden -update
func TestJobSpecGolden(t *testing.T) {
	for _, name := range []string{"full", "minimal", "wasm"} {
		t.Run(name, func(t *testing.T) {
			s := mustParseSpec(t, string(readSpec(t, name+".yaml")))
			c, err := s.canonical()
			if err != nil {
				t.Fatal(err)
			}
			payload, err := attest.Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			got := specCID(t, s) + "\n" + hex.EncodeToString(payload) + "\n"
			golden.Check(t, filepath.Join("testdata", "jobspec", name+".golden"), got)
			id, _ := cid.Decode(specCID(t, s))
			if id.Type() != cid.DagCBOR || id.Version() != 1 {
				t.Errorf("CID %s is not CIDv1 dag-cbor", id)
			}
		})
	}
}

func TestParseJobSpecValid(t *testing.T) {
	cases := []struct {
		name  string
		yaml  string
		check func(t *testing.T, r *RFQ)
	}{
		{"defaults", specBase, func(t *testing.T, r *RFQ) {
			if r.Runtime != RuntimeDocker || r.Resources.GPUs != 1 || r.Tier != TierSilver || r.Pricing != PayBid ||
				r.BidWindowMs != 500 || r.MaxDurationSec != 4*3600 || r.MinReliabilityPermille != 0 {
				t.Errorf("defaults: %+v", r)
			}
		}},
		{"wasm_infers_runtime_and_no_gpu", "module: " + specModule + "\nmax_price: 0.05\nduration: 10m\n", func(t *testing.T, r *RFQ) {
			if r.Runtime != RuntimeWasm || r.Resources.GPUs != 0 || r.Module != specModule || r.Image != "" {
				t.Errorf("wasm: %+v", r)
			}
		}},
		{"wasm_with_gpu", "runtime: wasm\nmodule: " + specModule + "\ngpus: 1\ngpu: l4\nmax_price: 0.5\nduration: 10m\n", func(t *testing.T, r *RFQ) {
			if r.Resources.GPUs != 1 || !reflect.DeepEqual(r.Resources.Models, []string{"l4"}) {
				t.Errorf("wasm gpu: %+v", r.Resources)
			}
		}},
		{"bare_vram_is_gb", specBase + "vram: 80\n", func(t *testing.T, r *RFQ) {
			if r.Resources.MinVRAMMiB != 76294 { // 80e9 bytes, rounded up; an H100 80GB has 81559 MiB
				t.Errorf("vram: %d", r.Resources.MinVRAMMiB)
			}
		}},
		{"vram_mib_and_case", specBase + "vram: 24576mib\nram: 1.5TB\ndisk: 1GiB\n", func(t *testing.T, r *RFQ) {
			if r.Resources.MinVRAMMiB != 24576 || r.Resources.RAMMiB != 1430512 || r.Resources.DiskGiB != 1 {
				t.Errorf("sizes: %+v", r.Resources)
			}
		}},
		{"bare_cc_major", specBase + "cc: 9\n", func(t *testing.T, r *RFQ) {
			if r.Resources.MinComputeCap != "9.0" {
				t.Errorf("cc: %q", r.Resources.MinComputeCap)
			}
		}},
		{"names_lower_cased_and_sorted", specBase + "gpu: [H100, a100-80gb]\nregion: [FR, de]\ntier: Gold\npricing: Second\n", func(t *testing.T, r *RFQ) {
			if !reflect.DeepEqual(r.Resources.Models, []string{"a100-80gb", "h100"}) || !reflect.DeepEqual(r.Regions, []string{"de", "fr"}) ||
				r.Tier != TierGold || r.Pricing != PaySecond {
				t.Errorf("names: %+v", r)
			}
		}},
		{"near_normalized", specBase + "near: [NL, de]\nmax_rtt: 40ms\n", func(t *testing.T, r *RFQ) {
			if !reflect.DeepEqual(r.Near, []string{"de", "nl"}) || len(r.Regions) != 0 || r.MaxRTTMs != 40 {
				t.Errorf("near %v, regions %v, max_rtt %d ms", r.Near, r.Regions, r.MaxRTTMs)
			}
		}},
		{"comma_scalar_list", specBase + "gpu: h100,a100\nregion: de, fr\n", func(t *testing.T, r *RFQ) {
			if len(r.Resources.Models) != 2 || len(r.Regions) != 2 {
				t.Errorf("lists: %+v %+v", r.Resources.Models, r.Regions)
			}
		}},
		{"price_six_decimals", strings.Replace(specBase, "1.80", "0.000001", 1), func(t *testing.T, r *RFQ) {
			if r.MaxPriceMicro != 1 {
				t.Errorf("price: %d", r.MaxPriceMicro)
			}
		}},
		{"price_exponent_from_yaml_marshal", strings.Replace(specBase, "1.80", "5e-05", 1), func(t *testing.T, r *RFQ) {
			if r.MaxPriceMicro != 50 { // yaml.Marshal writes 0.00005 this way
				t.Errorf("price: %d", r.MaxPriceMicro)
			}
		}},
		{"reliability_rounds_up", specBase + "min_reliability: 0.9995\n", func(t *testing.T, r *RFQ) {
			if r.MinReliabilityPermille != 1000 {
				t.Errorf("reliability: %d", r.MinReliabilityPermille)
			}
		}},
		{"durations_round_up", specBase + "max_duration: 2h0m0.5s\nmax_rtt: 1500us\n", func(t *testing.T, r *RFQ) {
			if r.MaxDurationSec != 7201 || r.MaxRTTMs != 2 {
				t.Errorf("durations: %d s, %d ms", r.MaxDurationSec, r.MaxRTTMs)
			}
		}},
		{"start_by_rfc3339", specBase + "start_by: 2026-03-02T13:00:00Z\n", func(t *testing.T, r *RFQ) {
			if r.StartByMs != fixedNow.Add(time.Hour).UnixMilli() {
				t.Errorf("start_by: %d", r.StartByMs)
			}
		}},
		{"null_means_default", specBase + "tier:\nregion: ~\n", func(t *testing.T, r *RFQ) {
			if r.Tier != TierSilver || r.Regions != nil {
				t.Errorf("null: %+v", r)
			}
		}},
		// YAML anchors are legal YAML; a spec may reuse a value with an alias.
		{"anchor_and_alias", "name: &n train\nimage: " + specImage + "\nmax_price: 1\nduration: 1h\nenv: {RUN: *n}\n", func(t *testing.T, r *RFQ) {}},
		{"bid_window_bounds", specBase + "bid_window: 60s\n", func(t *testing.T, r *RFQ) {
			if r.BidWindowMs != 60_000 || r.ExpiresAtMs != fixedNow.Add(70*time.Second).UnixMilli() {
				t.Errorf("window: %+v", r)
			}
		}},
		{"comments_and_quotes", "# job\nimage: '" + specImage + "' # pinned\nmax_price: \"2\"\nduration: \"1h\"\n", func(t *testing.T, r *RFQ) {
			if r.MaxPriceMicro != 2_000_000 {
				t.Errorf("price: %d", r.MaxPriceMicro)
			}
		}},
	}
	seen := map[string]bool{}
	for _, tc := range cases {
		if seen[tc.name] {
			t.Fatalf("duplicate case %q", tc.name)
		}
		seen[tc.name] = true
		t.Run(tc.name, func(t *testing.T) {
			s := mustParseSpec(t, tc.yaml)
			if err := s.Validate(); err != nil {
				t.Fatalf("Validate after parse: %v", err)
			}
			tc.check(t, specRFQ(t, s))
		})
	}
}

// TestJobSpecCIDSpellings: one job written differently has one CID; a
// different job has another.
func TestJobSpecCIDSpellings(t *testing.T) {
	base := specCID(t, mustParseSpec(t, specBase+"vram: 40GiB\ngpu: [h100, a100]\n"))
	for _, tc := range []struct {
		name string
		yaml string
		same bool
	}{
		{"vram_in_mib", specBase + "vram: 40960MiB\ngpu: [a100, h100]\n", true},
		{"explicit_defaults", specBase + "vram: 40GiB\ngpu: [h100, a100]\ntier: silver\npricing: first\ngpus: 1\nruntime: docker\nmax_duration: 4h\nbid_window: 500ms\n", true},
		{"duration_in_minutes", strings.Replace(specBase, "2h", "120m", 1) + "vram: 40GiB\ngpu: [H100, A100]\n", true},
		{"different_price", strings.Replace(specBase, "1.80", "1.81", 1) + "vram: 40GiB\ngpu: [h100, a100]\n", false},
		{"different_model", specBase + "vram: 40GiB\ngpu: [h100]\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := specCID(t, mustParseSpec(t, tc.yaml)); (got == base) != tc.same {
				t.Errorf("CID %s vs base %s, want same=%v", got, base, tc.same)
			}
		})
	}
}

// TestJobSpecSetMatchesYAML builds the documented CLI example with Set and
// checks it is the same job as its YAML form.
func TestJobSpecSetMatchesYAML(t *testing.T) {
	var s JobSpec
	for _, kv := range [][2]string{
		{"gpus", "1"}, {"gpu", "h100,a100"}, {"vram", "40GiB"}, {"tier", "bronze"}, {"max-price", "1.80"},
		{"region", "de,fr"}, {"duration", "2h"}, {"image", specImage}, {"env", "A=1"}, {"egress", "false"},
	} {
		if err := s.Set(kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	s.Command = []string{"python", "train.py"}
	y := mustParseSpec(t, "gpus: 1\ngpu: [h100, a100]\nvram: 40GiB\ntier: bronze\nmax_price: 1.80\nregion: [de, fr]\n"+
		"duration: 2h\nimage: "+specImage+"\nenv: {A: \"1\"}\ncommand: [python, train.py]\n")
	if a, b := specCID(t, &s), specCID(t, y); a != b {
		t.Errorf("Set-built CID %s != YAML CID %s", a, b)
	}
	for _, tc := range []struct{ name, value, want string }{
		{"max-prise", "1", `auction.JobSpec.Set: invalid job spec: max_prise: unknown field "max_prise" (did you mean "max_price"?)`},
		{"gpus", "two", `gpus: takes a whole number, got "two"`},
		{"env", "A", `env: takes KEY=VALUE, got "A"`},
		{"command", "x", "command: is the argument list after --; assign JobSpec.Command"},
	} {
		if err := s.Set(tc.name, tc.value); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Set(%q, %q) = %v, want %q", tc.name, tc.value, err, tc.want)
		}
	}
	if fields := JobSpecFields(); len(fields) != reflect.TypeOf(JobSpec{}).NumField()-1 {
		t.Errorf("JobSpecFields has %d names for %d fields", len(fields), reflect.TypeOf(JobSpec{}).NumField()-1)
	}
}

// TestJobSpecValidateWithoutYAML: a spec built in Go reports field names
// without line numbers.
func TestJobSpecValidateWithoutYAML(t *testing.T) {
	zero := 0
	s := &JobSpec{Image: specImage, GPUs: &zero, VRAM: "40GiB", MaxPrice: 1, Duration: "1h"}
	err := s.Validate()
	want := "auction.JobSpec.Validate: invalid job spec: gpus: 0 (a CPU-only job) cannot ask for gpu, vram or cc"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("Validate = %v, want prefix %q", err, want)
	}
	s.Command = []string{"a\x00b"}
	s.Env = map[string]string{"OK": strings.Repeat("v", maxArgLen+1)}
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "command[0]: must be valid UTF-8 without NUL") ||
		!strings.Contains(err.Error(), "env.OK: must be valid UTF-8 without NUL, at most 4096 bytes") {
		t.Fatalf("Validate = %v", err)
	}
	// Set after parsing drops the stale line number of the field it sets.
	p := mustParseSpec(t, specBase)
	if err := p.Set("duration", "soon"); err != nil {
		t.Fatal(err)
	}
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), `invalid job spec: duration: "soon"`) {
		t.Fatalf("Validate = %v", err)
	}
}

// TestJobSpecDocs checks docs/jobspec.md against the code: its full
// example is testdata/jobspec/full.yaml, every field is documented, and
// its CLI example builds the same job as the YAML beside it.
func TestJobSpecDocs(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "jobspec.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllSubmatch(doc, -1)
	if len(blocks) < 2 {
		t.Fatalf("docs/jobspec.md has %d yaml blocks, want the full example and the CLI equivalent", len(blocks))
	}
	if !bytes.Equal(blocks[0][1], readSpec(t, "full.yaml")) {
		t.Error("the first yaml block of docs/jobspec.md is not testdata/jobspec/full.yaml")
	}
	for _, f := range jobSpecFields {
		if !bytes.Contains(doc, []byte("| `"+f+"` |")) {
			t.Errorf("docs/jobspec.md has no table row for %s", f)
		}
	}
	cmd := regexp.MustCompile(`(?m)^idlegrid job submit (.*)$`).FindSubmatch(doc)
	if cmd == nil {
		t.Fatal("docs/jobspec.md has no `idlegrid job submit` example")
	}
	flags, args, _ := strings.Cut(strings.ReplaceAll(string(cmd[1]), "\\\n", ""), " -- ")
	var s JobSpec
	words := strings.Fields(flags)
	for i := 0; i+1 < len(words); i += 2 {
		if err := s.Set(strings.TrimPrefix(words[i], "--"), words[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	s.Command = strings.Fields(args)
	y := mustParseSpec(t, string(blocks[1][1]))
	if a, b := specCID(t, &s), specCID(t, y); a != b {
		t.Errorf("docs: CLI example CID %s != YAML equivalent CID %s", a, b)
	}
}

func FuzzParseJobSpec(f *testing.F) {
	for _, name := range []string{"full.yaml", "minimal.yaml", "wasm.yaml"} {
		f.Add(readSpec(f, name))
	}
	f.Add([]byte(specBase + "gpu: h100,a100\nenv: {A: b}\nstart_by: 2026-03-02T13:00:00Z\n"))
	f.Add([]byte(specBase + "model: " + testModelID + "\nmodel_size: 16GB\n"))
	f.Add([]byte("a: &x [1, *x]\n"))
	f.Add([]byte("image: [a\n"))
	f.Add([]byte{})
	_, renter := testKey(f, msgRenterSeed)
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseJobSpec(data)
		if err != nil {
			if s != nil || !errors.Is(err, ErrInvalidJobSpec) {
				t.Fatalf("error %v with spec %v", err, s)
			}
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("parsed spec does not validate: %v", err)
		}
		if _, err := s.CID(); err != nil {
			t.Fatalf("CID: %v", err)
		}
		r, err := s.RFQ(renter, msgNonce, fixedNow)
		if err != nil {
			if strings.Contains(err.Error(), "built an invalid RFQ") {
				t.Fatal(err)
			}
			return // e.g. an absolute start_by before fixedNow
		}
		if err := r.Validate(); err != nil {
			t.Fatalf("RFQ does not validate: %v", err)
		}
	})
}
