package node

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/node/costs"
)

func TestConfigEncodeParseRoundTrip(t *testing.T) {
	for _, role := range Roles {
		t.Run(string(role), func(t *testing.T) {
			want := DefaultConfig(role)
			want.Provider.Region = "de"
			want.Provider.Calendar = []string{"mon-fri 08:00-20:00 x1.5"}
			want.P2P.Bootstrap = []string{"/ip4/192.0.2.1/tcp/7401/p2p/12D3KooWQZDo27ooBp36oTQhLkqGWmbLteJQJEDK5krf7oreoT7h"}
			want.P2P.ConnGrace = 90 * time.Second
			if role == RoleProvider {
				want.Costs = costs.Config{
					TimeZone: "Europe/Berlin", PriceKWh: 0.3, Windows: []string{"daily 00:00-06:00 0.1"}, PUE: 1.3,
					HostIdleW: 250, BandwidthUSDMonth: 50, FeePct: 2, GPUCapitalUSD: 25000, DepreciationYears: 4,
					Models: []costs.ModelCapital{{Model: "h100-80gb", CapitalUSD: 30000, DepreciationYears: 4}},
				}
			}
			data, err := want.Encode()
			if err != nil {
				t.Fatal(err)
			}
			got, err := ParseConfig("config.toml", data)
			if err != nil {
				t.Fatalf("parse own output: %v\n%s", err, data)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("round trip mismatch:\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestDefaultConfigAvoidsIPFSPorts(t *testing.T) {
	cfg := DefaultConfig(RoleProvider)
	for _, a := range append(cfg.P2P.Listen, cfg.API.Listen) {
		if strings.Contains(a, "4001") || strings.Contains(a, "5001") {
			t.Errorf("default address %s clashes with IPFS", a)
		}
	}
}

func TestBadConfigErrorsCarryLineNumbers(t *testing.T) {
	base, err := func() ([]byte, error) { c := DefaultConfig(RoleProvider); c.Provider.Region = "de"; return c.Encode() }()
	if err != nil {
		t.Fatal(err)
	}
	lineOf := func(s string) int {
		for i, l := range strings.Split(string(base), "\n") {
			if strings.HasPrefix(l, s) {
				return i + 1
			}
		}
		t.Fatalf("no line starting %q", s)
		return 0
	}
	tests := []struct {
		name     string
		edit     func(string) string
		wantLine int
		wantMsg  string
	}{
		{"syntax error", func(s string) string { return strings.Replace(s, "conn_low = 64", "conn_low = = 64", 1) }, lineOf("conn_low"), ""},
		{"type mismatch", func(s string) string { return strings.Replace(s, "conn_low = 64", `conn_low = "many"`, 1) }, lineOf("conn_low"), ""},
		{"unknown key with suggestion", func(s string) string { return strings.Replace(s, "conn_low = 64", "conn_lo = 64", 1) }, lineOf("conn_low"), `did you mean "p2p.conn_low"`},
		{"invalid value", func(s string) string { return strings.Replace(s, "conn_high = 192", "conn_high = 1", 1) }, lineOf("conn_high"), "conn_low (64) <= conn_high (1)"},
		{"bad role", func(s string) string { return strings.Replace(s, `role = "provider"`, `role = "miner"`, 1) }, lineOf("role"), `"miner" is not a role`},
		{"bad duration", func(s string) string { return strings.Replace(s, `reconnect_min = "1s"`, `reconnect_min = "soon"`, 1) }, lineOf("reconnect_min"), ""},
		{"bad pue", func(s string) string { return strings.Replace(s, "pue = 0.0", "pue = 0.5", 1) }, lineOf("pue"), "costs.pue"},
		{"bootstrap without peer id", func(s string) string {
			return strings.Replace(s, "bootstrap = []", `bootstrap = ["/ip4/1.2.3.4/tcp/7401"]`, 1)
		}, lineOf("bootstrap"), "must end in /p2p/"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig("config.toml", []byte(tc.edit(string(base))))
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("got %v (%T), want *ConfigError", err, err)
			}
			if ce.Line != tc.wantLine {
				t.Errorf("line %d, want %d (%v)", ce.Line, tc.wantLine, err)
			}
			if !strings.HasPrefix(err.Error(), "config.toml:") {
				t.Errorf("error %q does not start with file:line", err)
			}
			if tc.wantMsg != "" && !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("error %q does not contain %q", err, tc.wantMsg)
			}
		})
	}
}

func TestEnvAndSetOverrides(t *testing.T) {
	cfg := DefaultConfig(RoleRenter)
	env := map[string]string{
		"IDLEGRID_API_LISTEN":     "127.0.0.1:9999",
		"IDLEGRID_P2P_CONN_LOW":   "10",
		"IDLEGRID_P2P_NAT":        "false",
		"IDLEGRID_P2P_LISTEN":     "/ip4/127.0.0.1/tcp/1, /ip4/127.0.0.1/udp/1/quic-v1",
		"IDLEGRID_P2P_CONN_GRACE": "5s",
	}
	if err := cfg.ApplyEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok }); err != nil {
		t.Fatal(err)
	}
	if cfg.API.Listen != "127.0.0.1:9999" || cfg.P2P.ConnLow != 10 || cfg.P2P.NAT || len(cfg.P2P.Listen) != 2 || cfg.P2P.ConnGrace != 5*time.Second {
		t.Fatalf("env not applied: %+v", cfg)
	}
	err := cfg.ApplyEnv(func(k string) (string, bool) {
		if k == "IDLEGRID_P2P_CONN_LOW" {
			return "lots", true
		}
		return "", false
	})
	if err == nil || !strings.Contains(err.Error(), "IDLEGRID_P2P_CONN_LOW") {
		t.Fatalf("bad env value: %v", err)
	}
	if err := cfg.Set("provider.calendar", `["mon-fri 08:00-20:00 x1.5", "sat,sun 00:00-24:00 x0.8"]`); err != nil || len(cfg.Provider.Calendar) != 2 {
		t.Fatalf("array value: %v %q", err, cfg.Provider.Calendar)
	}
	if err := cfg.Set("p2p.nope", "1"); err == nil || !strings.Contains(err.Error(), "unknown key") {
		t.Fatalf("unknown key: %v", err)
	}
}

func TestInitCreatesHomeAndRefusesToClobber(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	cfg := DefaultConfig(RoleProvider)
	cfg.Provider.Region = "de"
	res, err := Init(home, RoleProvider, InitOptions{Config: &cfg})
	if err != nil {
		t.Fatal(err)
	}
	for file, mode := range map[string]os.FileMode{"identity.key": 0o600, "api.token": 0o600, "config.toml": 0o644} {
		st, err := os.Stat(filepath.Join(home, file))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != mode {
			t.Errorf("%s mode %#o, want %#o", file, st.Mode().Perm(), mode)
		}
	}
	if _, err := os.Stat(StorePath(home)); err != nil {
		t.Fatalf("store not created: %v", err)
	}
	// Identity and token round-trip.
	sk, err := LoadIdentity(home)
	if err != nil {
		t.Fatal(err)
	}
	if id, _ := peer.IDFromPrivateKey(sk); id != res.PeerID {
		t.Fatalf("loaded identity %s, init reported %s", id, res.PeerID)
	}
	tok1, err := LoadToken(home)
	if err != nil || len(tok1) != 64 {
		t.Fatalf("token %q: %v", tok1, err)
	}
	loaded, err := LoadConfig(home)
	if err != nil || loaded.Role != RoleProvider || loaded.Home != home || loaded.Provider.Region != "de" {
		t.Fatalf("config: %+v %v", loaded, err)
	}

	if _, err := Init(home, RoleProvider, InitOptions{}); err == nil || !strings.Contains(err.Error(), "provider.region") {
		t.Fatalf("a provider home without a region must be refused: %v", err)
	}
	if _, err := Init(home, RoleRenter, InitOptions{}); !errors.Is(err, ErrHomeExists) {
		t.Fatalf("second init: %v, want ErrHomeExists", err)
	}
	if cfg, _ := LoadConfig(home); cfg.Role != RoleProvider {
		t.Fatal("refused init must not change the config")
	}
	res2, err := Init(home, RoleRenter, InitOptions{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if !res2.KeptIdentity || res2.PeerID != res.PeerID {
		t.Fatalf("--force must keep the identity: %+v", res2)
	}
	if tok2, _ := LoadToken(home); tok2 == tok1 {
		t.Fatal("--force should rotate the API token")
	}
	if cfg, _ := LoadConfig(home); cfg.Role != RoleRenter {
		t.Fatal("--force must rewrite the config")
	}
}

func TestInsecureIdentityRefused(t *testing.T) {
	home := t.TempDir()
	if _, err := Init(home, RoleRenter, InitOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(home, "identity.key"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadIdentity(home); !errors.Is(err, ErrInsecureFile) {
		t.Fatalf("got %v, want ErrInsecureFile", err)
	}
}

func TestLoadConfigMissingHome(t *testing.T) {
	_, err := LoadConfig(filepath.Join(t.TempDir(), "nope"))
	if !errors.Is(err, ErrNoHome) || !strings.Contains(err.Error(), "idlegrid init") {
		t.Fatalf("got %v", err)
	}
}

// TestProviderNeedsRegionAndKnownProfiles: a provider config names a real
// country (with a suggestion for a common slip) and simulated GPU
// profiles the node knows.
func TestProviderNeedsRegionAndKnownProfiles(t *testing.T) {
	cfg := DefaultConfig(RoleProvider)
	cfg.Provider.Region = "uk"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), `did you mean "gb"`) {
		t.Fatalf("uk: %v", err)
	}
	cfg.Provider.Region = "de"
	cfg.GPU.Backend = "sim"
	cfg.GPU.Sim.Profiles = []string{"h100-pcie"}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "unknown profile") {
		t.Fatalf("unknown profile: %v", err)
	}
}
