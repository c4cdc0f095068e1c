package auction

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseJobSpecErrors(t *testing.T) {
	cases := []struct {
		name string
		yaml string
		want []string // substrings of the error, in order
	}{
		{"empty", "", []string{"invalid job spec: empty document"}},
		{"not_a_mapping", "- a\n- b\n", []string{"line 1: a job spec is a mapping of field: value"}},
		{"two_documents", specBase + "---\nname: x\n", []string{"line 4: a job spec is one YAML document"}},
		{"yaml_syntax", "image: [a\n", []string{"invalid job spec: yaml: line"}},
		{"unknown_field_suggests", specBase + "max_prise: 2\n", []string{`line 4: unknown field "max_prise" (did you mean "max_price"?)`}},
		{"flag_spelling_suggests", specBase + "max-rtt: 10ms\n", []string{`line 4: unknown field "max-rtt" (did you mean "max_rtt"?)`}},
		{"unknown_field_lists_fields", specBase + "priority: high\n", []string{`unknown field "priority"; fields are name, runtime, image`}},
		{"repeated_field", specBase + "duration: 3h\n", []string{"line 4: duration: repeated (first on line 3)"}},
		{"missing_required", "name: x\n", []string{
			"image: missing: set image (docker, REF@sha256:<64 hex>) or module (wasm, a CID)",
			"max_price: missing: the most you pay per GPU-hour, in USD (e.g. 1.80)",
			"duration: missing: the expected run time, e.g. 2h"}},
		{"tag_only_image", "image: pytorch/pytorch:2.3\nmax_price: 1\nduration: 1h\n", []string{
			`line 1: image: image "pytorch/pytorch:2.3" is not pinned by digest: write it as pytorch/pytorch:2.3@sha256:<64 hex> ` +
				"(a tag can move to other content, so reproducibility and providers' allowed-image policies match digests)"}},
		{"short_digest", "image: a/b@sha256:3f1a\nmax_price: 1\nduration: 1h\n", []string{"got 4 characters"}},
		{"image_and_module", "image: " + specImage + "\nmodule: " + specModule + "\nmax_price: 1\nduration: 1h\n", []string{
			"line 1: image: set image (docker) or module (wasm), not both"}},
		{"docker_with_module", specBase + "runtime: docker\nmodule: " + specModule + "\n", []string{
			"line 5: module: is for the wasm runtime; the docker runtime runs image"}},
		{"wasm_with_image", specBase + "runtime: wasm\n", []string{
			"line 1: image: is for the docker runtime; the wasm runtime runs module", "; module: missing: the wasm runtime needs the module's CID"}},
		{"bad_module", "module: not-a-cid\nmax_price: 1\nduration: 1h\n", []string{`line 1: module: "not-a-cid" is not a CID`}},
		{"unknown_runtime", specBase + "runtime: podman\n", []string{`line 4: runtime: "podman" is not docker or wasm`}},
		{"command_string", specBase + "command: python train.py\n", []string{
			"line 4: command: want a list, e.g. [python, train.py]; it is never split by a shell"}},
		{"command_nested", specBase + "command: [[a]]\n", []string{"command: line 4: list entries must be single values"}},
		{"env_list", specBase + "env: [A=1]\n", []string{"line 4: env: want a mapping of NAME: value"}},
		{"env_bad_name", specBase + "env: {1X: a}\n", []string{`line 4: env: "1X" is not a variable name`}},
		{"env_repeated", specBase + "env:\n  A: 1\n  A: 2\n", []string{"env: line 6: A repeated"}},
		{"zero_gpus_with_vram", specBase + "gpus: 0\nvram: 40GiB\n", []string{"line 4: gpus: 0 (a CPU-only job) cannot ask for gpu, vram or cc"}},
		{"negative_gpus", specBase + "gpus: -1\n", []string{`line 4: gpus: takes a whole number, got "-1"`}},
		{"too_many_gpus", specBase + "gpus: 65\n", []string{"line 4: gpus: 65 out of range 0..64"}},
		{"gpus_list", specBase + "gpus: [1]\n", []string{"line 4: gpus: want a single value, not a list or mapping"}},
		{"vendor_model_name", specBase + "gpu: [H100 80GB]\n", []string{
			`line 4: gpu[0]: "H100 80GB" is not a GPU model slug or family (lower-case letters and digits joined by '-', e.g. h100 or h100-80gb) (did you mean "h100-80gb"?)`}},
		{"duplicate_model", specBase + "gpu: [h100, H100]\n", []string{`line 4: gpu[1]: duplicate "h100"`}},
		{"empty_list_entry", specBase + "gpu: h100,,a100\n", []string{`line 4: gpu: empty entry in "h100,,a100"`}},
		{"vram_bad_unit", specBase + "vram: 40G\n", []string{`line 4: vram: bad unit "G" in "40G"; use MiB, GiB, GB or TB (did you mean "GB"?)`}},
		{"vram_gi", specBase + "vram: 40Gi\n", []string{`(did you mean "GiB"?)`}},
		{"vram_not_size", specBase + "vram: lots\n", []string{`line 4: vram: "lots" is not a size such as 40GiB, 80GB or 24576MiB`}},
		{"vram_zero", specBase + "vram: 0GB\n", []string{`line 4: vram: "0GB" must be more than 0 (leave vram out for no minimum)`}},
		{"ram_too_big", specBase + "ram: 2000000TB\n", []string{`line 4: ram: "2000000TB" exceeds 1073741824 MiB`}},
		{"bad_cc", specBase + "cc: nine\n", []string{`line 4: cc: "nine" is not a compute capability such as 8.0 or 9.0`}},
		{"cpu_not_number", specBase + "cpu: many\n", []string{`line 4: cpu: takes a whole number, got "many"`}},
		{"tier_typo", specBase + "tier: bronz\n", []string{`line 4: tier: "bronz" is not gold, silver or bronze (did you mean "bronze"?)`}},
		{"price_not_number", "image: " + specImage + "\nmax_price: $1.80\nduration: 1h\n", []string{
			`line 2: max_price: takes USD per GPU-hour such as 1.80, got "$1.80"`}},
		{"price_zero", "image: " + specImage + "\nmax_price: 0\nduration: 1h\n", []string{"line 2: max_price: missing"}},
		{"price_negative", "image: " + specImage + "\nmax_price: -1\nduration: 1h\n", []string{"line 2: max_price: -1 is not a positive USD amount"}},
		{"price_too_fine", "image: " + specImage + "\nmax_price: 0.0000001\nduration: 1h\n", []string{
			"line 2: max_price: 1e-07 is finer than 1 micro-USD (at most 6 decimal places)"}},
		{"price_too_high", "image: " + specImage + "\nmax_price: 20000\nduration: 1h\n", []string{"line 2: max_price: 20000 exceeds 10000 USD per GPU-hour"}},
		{"price_nan", "image: " + specImage + "\nmax_price: .nan\nduration: 1h\n", []string{`max_price: takes USD per GPU-hour such as 1.80, got ".nan"`}},
		{"reliability_over_one", specBase + "min_reliability: 95\n", []string{"line 4: min_reliability: 95 is not a number from 0 to 1"}},
		{"uk_region", specBase + "region: [de, uk]\n", []string{
			`line 4: region[1]: "uk" is not an ISO 3166-1 alpha-2 country code such as de or us (did you mean "gb"?)`}},
		{"uk_near", specBase + "near: uk\n", []string{
			`line 4: near[0]: "uk" is not an ISO 3166-1 alpha-2 country code such as de or us (did you mean "gb"?)`}},
		{"duration_days", "image: " + specImage + "\nmax_price: 1\nduration: 2d\n", []string{`line 3: duration: "2d": durations have no day unit; write 48h`}},
		{"duration_garbage", "image: " + specImage + "\nmax_price: 1\nduration: soon\n", []string{`line 3: duration: "soon" is not a duration such as 90s, 30m or 2h`}},
		{"duration_negative", "image: " + specImage + "\nmax_price: 1\nduration: -1h\n", []string{`line 3: duration: "-1h" must be positive`}},
		{"duration_too_long", "image: " + specImage + "\nmax_price: 1\nduration: 9000h\n", []string{`line 3: duration: "9000h" exceeds 8784h0m0s`}},
		{"max_duration_short", specBase + "max_duration: 1h\n", []string{"line 4: max_duration: 1h is shorter than duration 2h"}},
		{"max_rtt_too_long", specBase + "max_rtt: 2m\n", []string{`line 4: max_rtt: "2m" exceeds 1m0s`}},
		{"start_by_garbage", specBase + "start_by: tomorrow\n", []string{
			`line 4: start_by: "tomorrow" is neither an RFC 3339 time (2026-03-02T15:04:05Z) nor a duration from submission (30m)`}},
		{"bid_window_short", specBase + "bid_window: 10ms\n", []string{"line 4: bid_window: 10ms is shorter than 50ms: providers could not answer in time"}},
		{"bid_window_long", specBase + "bid_window: 2m\n", []string{`line 4: bid_window: "2m" exceeds 1m0s`}},
		{"bad_dataset", specBase + "datasets: [x]\n", []string{`line 4: datasets[0]: "x" is not a CID`}},
		{"dataset_spellings_duplicate", specBase + "datasets: [" + msgDataset + ", B" + strings.ToUpper(msgDataset[1:]) + "]\n",
			[]string{`line 4: datasets[1]: duplicate "` + msgDataset + `"`}},
		{"bad_pricing", specBase + "pricing: vickrey\n", []string{`line 4: pricing: "vickrey" is not first or second`}},
		{"egress_yes", specBase + "egress: yes\n", []string{`line 4: egress: takes true or false, got "yes"`}},
		{"min_notice_not_bronze", specBase + "min_notice: 5m\n", []string{
			"line 4: min_notice: applies only to tier bronze (tier is silver): gold and silver are never preempted"}},
		{"name_control_chars", specBase + "name: \"a\\tb\"\n", []string{"line 4: name: must be at most 128 printable ASCII characters"}},
		{"problems_in_file_order", "duration: x\nmax_price: y\nimage: z\n", []string{"line 1: duration", "line 2: max_price", "line 3: image"}},
		{"one_report_per_bad_field", "image: " + specImage + "\nmax_price: abc\nduration: 1h\n", []string{
			`line 2: max_price: takes USD per GPU-hour such as 1.80, got "abc"`}},
	}
	seen := map[string]bool{}
	for _, tc := range cases {
		if seen[tc.name] {
			t.Fatalf("duplicate case %q", tc.name)
		}
		seen[tc.name] = true
		t.Run(tc.name, func(t *testing.T) {
			s, err := ParseJobSpec([]byte(tc.yaml))
			if err == nil {
				t.Fatalf("ParseJobSpec accepted it: %+v", s)
			}
			if !errors.Is(err, ErrInvalidJobSpec) || !strings.HasPrefix(err.Error(), "auction.ParseJobSpec: ") {
				t.Fatalf("error %q does not wrap ErrInvalidJobSpec under the operation name", err)
			}
			rest := err.Error()
			for _, w := range tc.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("error:\n  %s\nwant it to contain (in order):\n  %s", err, w)
				}
				rest = rest[i+len(w):]
			}
		})
	}
}

func TestParseJobSpecOneReportPerField(t *testing.T) {
	_, err := ParseJobSpec([]byte("image: " + specImage + "\nmax_price: abc\nduration: 1h\n"))
	if n := strings.Count(err.Error(), "max_price"); n != 1 {
		t.Errorf("max_price reported %d times: %v", n, err)
	}
}

func TestParseJobSpecTooLarge(t *testing.T) {
	big := specBase + "name: x\n" + strings.Repeat("# padding\n", MaxJobSpecSize/10)
	_, err := ParseJobSpec([]byte(big))
	if !errors.Is(err, ErrInvalidJobSpec) || !strings.Contains(err.Error(), "bytes, at most 65536") {
		t.Fatalf("ParseJobSpec oversize: %v", err)
	}
}

func TestJobSpecRFQErrors(t *testing.T) {
	_, renter := testKey(t, msgRenterSeed)
	s := mustParseSpec(t, specBase)
	if _, err := s.RFQ(renter, msgNonce[:8], fixedNow); err == nil || !strings.Contains(err.Error(), "nonce is 8 bytes, want 16") {
		t.Errorf("short nonce: %v", err)
	}
	if _, err := s.RFQ("", msgNonce, fixedNow); err == nil || !strings.Contains(err.Error(), "renter:") {
		t.Errorf("empty renter: %v", err)
	}
	past := mustParseSpec(t, specBase+"start_by: 2026-03-02T11:00:00Z\n")
	if _, err := past.RFQ(renter, msgNonce, fixedNow); err == nil ||
		!strings.Contains(err.Error(), "start_by 2026-03-02T11:00:00Z is not after now (2026-03-02T12:00:00Z)") {
		t.Errorf("start_by in the past: %v", err)
	}
	bad := &JobSpec{}
	if _, err := bad.RFQ(renter, msgNonce, fixedNow); !errors.Is(err, ErrInvalidJobSpec) {
		t.Errorf("invalid spec: %v", err)
	}
	if _, err := bad.CID(); !errors.Is(err, ErrInvalidJobSpec) {
		t.Errorf("invalid spec CID: %v", err)
	}
	// The RFQ is sealable by its renter and opens to the same value.
	key, _ := testKey(t, msgRenterSeed)
	r := specRFQ(t, mustParseSpec(t, string(readSpec(t, "full.yaml"))))
	raw, err := SealRFQ(r, key)
	if err != nil {
		t.Fatal(err)
	}
	if back, _, err := OpenRFQ(raw); err != nil || !reflect.DeepEqual(back, r) {
		t.Errorf("OpenRFQ: %v\n got %+v\nwant %+v", err, back, r)
	}
}
