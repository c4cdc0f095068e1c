package node

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestFirmHoldConfig: the provider's firm-hold keys are written with
// their defaults, read back, and out-of-range values are refused with the
// key named.
func TestFirmHoldConfig(t *testing.T) {
	c := DefaultConfig(RoleProvider)
	c.Provider.Region = "de"
	base, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{`firm_hold = "2s"`, "firm_hold_gpus = 8"} {
		if !strings.Contains(string(base), line) {
			t.Fatalf("config template lacks %q", line)
		}
	}
	back, err := ParseConfig("config.toml", base)
	if err != nil {
		t.Fatal(err)
	}
	if back.Provider.FirmHold != 2*time.Second || back.Provider.FirmHoldGPUs != 8 {
		t.Fatalf("read back firm_hold %s, firm_hold_gpus %d", back.Provider.FirmHold, back.Provider.FirmHoldGPUs)
	}
	off := strings.Replace(string(base), `firm_hold = "2s"`, `firm_hold = "0s"`, 1)
	if _, err := ParseConfig("config.toml", []byte(off)); err != nil {
		t.Fatalf("firm_hold = 0s (off) refused: %v", err)
	}
	for _, tc := range []struct{ from, to, key string }{
		{`firm_hold = "2s"`, `firm_hold = "2m"`, "provider.firm_hold"},
		{`firm_hold = "2s"`, `firm_hold = "-1s"`, "provider.firm_hold"},
		{"firm_hold_gpus = 8", "firm_hold_gpus = -1", "provider.firm_hold_gpus"},
		{"firm_hold_gpus = 8", "firm_hold_gpus = 65", "provider.firm_hold_gpus"},
	} {
		_, err := ParseConfig("config.toml", []byte(strings.Replace(string(base), tc.from, tc.to, 1)))
		var ce *ConfigError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("%s: got %v, want a config error naming %s", tc.to, err, tc.key)
		}
	}
}
