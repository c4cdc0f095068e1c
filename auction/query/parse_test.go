package query

import (
	"errors"
	"testing"
)

type parseCase struct {
	name string
	in   string
	want string // canonical String() on success
	err  string // full error message on failure
}

var parseOK = []parseCase{
	{name: "empty", in: "", want: ""},
	{name: "design_example", in: "gpu=h100 vram>=80 region in [de,fr] price<=2.5 reliability>=0.9",
		want: "gpu=h100 vram>=80 region in [de,fr] price<=2.5 reliability>=0.9"},
	{name: "spaces_around_ops", in: "  vram >= 80GiB   cpu > 8 ", want: "vram>=80GiB cpu>8"},
	{name: "double_equals", in: "gpu==a100", want: "gpu=a100"},
	{name: "case_folding", in: "GPU=H100 Region IN [DE,Fr] tier=Gold", want: "gpu=h100 region in [de,fr] tier=gold"},
	{name: "size_units", in: "vram>=48GB ram>=512GiB disk>=2TB vram<=81920MiB",
		want: "vram>=48GB ram>=512GiB disk>=2TB vram<=81920MiB"},
	{name: "fractional_size", in: "disk>=1.5TB", want: "disk>=1.5TB"},
	{name: "prices_per_tier", in: "price.gold<=3 price.silver<2.25 price.bronze<=0.000001",
		want: "price.gold<=3 price.silver<2.25 price.bronze<=0.000001"},
	{name: "compute_capability", in: "cc>=8.9 cc<10", want: "cc>=8.9 cc<10.0"},
	{name: "lists_with_spaces", in: "runtime in [ docker , wasm ]", want: "runtime in [docker,wasm]"},
	{name: "notin", in: "region notin [cn,ru] gpu notin [t4]", want: "region notin [cn,ru] gpu notin [t4]"},
	{name: "quoted_values", in: `gpu="h100-80gb" region in ['de',"fr"]`, want: "gpu=h100-80gb region in [de,fr]"},
	{name: "bools_and_enums", in: "egress=true reachability!=relayed", want: "egress=true reachability!=relayed"},
	{name: "counts", in: "gpus>=4 cpu in [32,64]", want: "gpus>=4 cpu in [32,64]"},
	{name: "dataset_cid", in: "dataset=bafkreigm5oaiovbm2ppanpabo35rzgyzh7kbg4sg2cwfjedast7isv2peq",
		want: "dataset=bafkreigm5oaiovbm2ppanpabo35rzgyzh7kbg4sg2cwfjedast7isv2peq"},
	{name: "reliability_bounds", in: "reliability>=0 reliability<=1", want: "reliability>=0 reliability<=1"},
}

var parseErr = []parseCase{
	{name: "unknown_field_typo", in: "vrma>=80",
		err: `query.Parse: column 1: unknown field "vrma" (did you mean "vram"?)`},
	{name: "unknown_field_far", in: "gpu=h100 colour=red",
		err: `query.Parse: column 10: unknown field "colour"; fields: gpu, gpus, vram, cc, region, price, price.gold, price.silver, price.bronze, reliability, runtime, tier, cpu, ram, cpu.free, ram.free, price.cpu, disk, dataset, reachability, egress`},
	{name: "unknown_price_tier", in: "price.gld<=2",
		err: `query.Parse: column 1: unknown field "price.gld" (did you mean "price.gold"?)`},
	{name: "unit_as_term", in: "vram>=80 GiB",
		err: `query.Parse: column 10: unknown field "GiB"; a unit goes right after its number, as in vram>=80GiB`},
	{name: "bad_unit", in: "vram>=80Gb2",
		err: `query.Parse: column 7: bad unit "Gb2" in "80Gb2" for vram; use MiB, GiB, GB or TB (did you mean "GB"?)`},
	{name: "bad_unit_no_suggestion", in: "ram>=8parsecs",
		err: `query.Parse: column 6: bad unit "parsecs" in "8parsecs" for ram; use MiB, GiB, GB or TB`},
	{name: "size_not_a_number", in: "vram>=big",
		err: `query.Parse: column 7: vram takes a size such as 80GiB, 48GB or 512MiB, got "big"`},
	{name: "price_with_unit", in: "price<=2.5GiB",
		err: `query.Parse: column 8: price takes plain USD per GPU-hour such as 2.5, got "2.5GiB"`},
	{name: "price_too_precise", in: "price<=0.0000001",
		err: `query.Parse: column 8: price "0.0000001" is finer than 1 micro-USD (at most 6 decimal places)`},
	{name: "price_negative", in: "price<=-1",
		err: `query.Parse: column 8: price takes plain USD per GPU-hour such as 2.5, got "-1"`},
	{name: "ordering_on_region", in: "region<de",
		err: `query.Parse: column 7: operator < does not apply to region (a name); use =, !=, in or notin`},
	{name: "ordering_on_gpu", in: "gpu>=h100",
		err: `query.Parse: column 4: operator >= does not apply to gpu (a GPU model); use =, !=, in or notin`},
	{name: "list_on_bool", in: "egress in [true]",
		err: `query.Parse: column 8: operator in does not apply to egress (a boolean); use = or !=`},
	{name: "type_mismatch_count", in: "gpus>=two",
		err: `query.Parse: column 7: gpus takes a whole number, got "two"`},
	{name: "count_with_unit", in: "cpu>=8GiB",
		err: `query.Parse: column 6: cpu takes a whole number, got "8GiB"`},
	{name: "reliability_out_of_range", in: "reliability>=1.5",
		err: `query.Parse: column 14: reliability takes a number from 0 to 1, got "1.5"`},
	{name: "bad_compute_cap", in: "cc>=ampere",
		err: `query.Parse: column 5: cc takes a compute capability like 8.9 or 9.0, got "ampere"`},
	{name: "uk_is_gb", in: "region=uk",
		err: `query.Parse: column 8: unknown country code "uk" for region; use ISO 3166-1 alpha-2 codes such as de or us (did you mean "gb"?)`},
	{name: "country_name", in: "region=germany",
		err: `query.Parse: column 8: unknown country code "germany" for region; use ISO 3166-1 alpha-2 codes such as de or us`},
	{name: "tier_typo", in: "tier=gld",
		err: `query.Parse: column 6: unknown tier "gld"; valid: gold, silver, bronze (did you mean "gold"?)`},
	{name: "runtime_typo", in: "runtime=dokker",
		err: `query.Parse: column 9: unknown runtime "dokker"; valid: docker, wasm (did you mean "docker"?)`},
	{name: "gpu_not_slug", in: `gpu="H100 80GB"`,
		err: `query.Parse: column 5: "H100 80GB" is not a GPU model (lower-case letters and digits joined by '-', e.g. h100 or h100-80gb)`},
	{name: "bad_dataset", in: "dataset=foo",
		err: `query.Parse: column 9: dataset takes a CID, got "foo"`},
	{name: "bad_bool", in: "egress=yes",
		err: `query.Parse: column 8: egress takes true or false, got "yes"`},
	{name: "missing_operator", in: "gpu h100",
		err: `query.Parse: column 5: expected an operator (=, !=, <, <=, >, >=, in, notin) after gpu, found "h100"`},
	{name: "missing_value", in: "gpu=",
		err: `query.Parse: column 5: expected a value for gpu, found end of query`},
	{name: "list_without_in", in: "region=[de,fr]",
		err: `query.Parse: column 8: a list needs in or notin, as in region in [a,b]`},
	{name: "in_without_list", in: "region in de",
		err: `query.Parse: column 11: in needs a list such as [a,b], found "de"`},
	{name: "empty_list", in: "region in []",
		err: `query.Parse: column 12: empty list`},
	{name: "unclosed_list", in: "region in [de,fr",
		err: `query.Parse: column 17: expected "," or "]" in list, found end of query`},
	{name: "missing_space", in: "region in [de]price<=2",
		err: `query.Parse: column 15: missing space before "price": terms are separated by spaces`},
	{name: "lonely_bang", in: "gpu!h100",
		err: `query.Parse: column 4: unexpected "!" (did you mean "!="?)`},
	{name: "bad_character", in: "gpu=h100 & vram>=80",
		err: `query.Parse: column 10: unexpected character '&'`},
	{name: "unterminated_string", in: `gpu="h100`,
		err: `query.Parse: column 5: unterminated quoted string`},
	{name: "starts_with_operator", in: ">=80",
		err: `query.Parse: column 1: expected a field name, found ">="`},
	{name: "vram_too_large", in: "vram>=99999999999TB",
		err: `query.Parse: column 7: vram value "99999999999TB" is too large`},
}

func TestParse(t *testing.T) {
	for _, tc := range parseOK {
		t.Run(tc.name, func(t *testing.T) {
			q, err := Parse(tc.in)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.in, err)
			}
			if got := q.String(); got != tc.want {
				t.Errorf("Parse(%q).String() = %q, want %q", tc.in, got, tc.want)
			}
			again, err := Parse(q.String())
			if err != nil || again.String() != q.String() {
				t.Errorf("canonical form does not re-parse to itself: %v", err)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range parseErr {
		t.Run(tc.name, func(t *testing.T) {
			q, err := Parse(tc.in)
			if err == nil {
				t.Fatalf("Parse(%q) = %q, want error", tc.in, q)
			}
			if err.Error() != tc.err {
				t.Errorf("Parse(%q) error\n got %s\nwant %s", tc.in, err, tc.err)
			}
			var pe *Error
			if !errors.As(err, &pe) {
				t.Errorf("error is %T, want *query.Error", err)
			}
		})
	}
}

func TestParseTooLong(t *testing.T) {
	long := make([]byte, MaxQueryLen+1)
	for i := range long {
		long[i] = ' '
	}
	if _, err := Parse(string(long)); err == nil {
		t.Fatal("Parse accepted an over-long query")
	}
}

func TestParseSort(t *testing.T) {
	for _, tc := range []struct {
		in, field string
		desc      bool
		err       string
	}{
		{in: "price", field: "price"},
		{in: "-price", field: "price", desc: true},
		{in: "+reliability", field: "reliability"},
		{in: "-VRAM", field: "vram", desc: true},
		{in: "", field: ""},
		{in: "-prise", err: `query.ParseSort: cannot sort by "-prise"; sortable: price, price.gold, price.silver, price.bronze, reliability, gpus, vram, cc, cpu, ram, cpu.free, ram.free, price.cpu, disk (did you mean "price"?)`},
		{in: "region", err: `query.ParseSort: cannot sort by "region"; sortable: price, price.gold, price.silver, price.bronze, reliability, gpus, vram, cc, cpu, ram, cpu.free, ram.free, price.cpu, disk`},
	} {
		t.Run("sort_"+tc.in, func(t *testing.T) {
			k, err := ParseSort(tc.in)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("ParseSort(%q) error = %v, want %s", tc.in, err, tc.err)
				}
				return
			}
			if err != nil || k.Field != tc.field || k.Desc != tc.desc {
				t.Errorf("ParseSort(%q) = %+v, %v", tc.in, k, err)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	for _, tc := range parseOK {
		f.Add(tc.in)
	}
	for _, tc := range parseErr {
		f.Add(tc.in)
	}
	offers := testOffers()
	f.Fuzz(func(t *testing.T, s string) {
		q, err := Parse(s)
		if err != nil {
			var pe *Error
			if !errors.As(err, &pe) || pe.Pos < 0 || pe.Pos > len(s) {
				t.Fatalf("bad error for %q: %v", s, err)
			}
			return
		}
		canon := q.String()
		again, err := Parse(canon)
		if err != nil {
			t.Fatalf("canonical %q of %q does not parse: %v", canon, s, err)
		}
		if again.String() != canon {
			t.Fatalf("canonical form unstable: %q -> %q", canon, again.String())
		}
		stats := Explain(q, offers)
		n := 0
		for _, o := range offers {
			if q.Match(o) {
				n++
			}
		}
		if len(stats) > 0 && stats[len(stats)-1].Remaining != n {
			t.Fatalf("explain says %d remain, Match says %d", stats[len(stats)-1].Remaining, n)
		}
	})
}
