package auction

import "testing"

func TestUnknownGPUModel(t *testing.T) {
	offered := []string{"zz9-48gb"}
	for _, tc := range []struct {
		p       string
		unknown bool
	}{
		{"h100", false}, {"h100-80gb", false}, {"rtx", false}, {"rtx-4090-24gb", false},
		{"zz9", false}, // in the market view only
		{"foo", true}, {"h1000", true}, {"rtx-9999", true},
	} {
		if got := UnknownGPUModel(tc.p, offered); got != tc.unknown {
			t.Errorf("UnknownGPUModel(%q) = %v, want %v", tc.p, got, tc.unknown)
		}
	}
}
