package auction

import "testing"

func TestCountryCodes(t *testing.T) {
	if n := len(countryCodes); n != 249 {
		t.Errorf("%d country codes, want the 249 assigned ISO 3166-1 codes", n)
	}
	for _, tc := range []struct {
		in      string
		valid   bool
		suggest string
	}{
		{"de", true, "de"}, {"gb", true, "gb"}, {"uk", false, "gb"}, {"DE", false, "de"},
		{"xx", false, ""}, {"", false, ""}, {"deu", false, ""},
	} {
		if got := IsCountryCode(tc.in); got != tc.valid {
			t.Errorf("IsCountryCode(%q) = %v", tc.in, got)
		}
		if got := SuggestCountry(tc.in); got != tc.suggest {
			t.Errorf("SuggestCountry(%q) = %q, want %q", tc.in, got, tc.suggest)
		}
	}
}
