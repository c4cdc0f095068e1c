package node

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/gpu"
	"github.com/idlegrid/idlegrid/store"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
)

// Role is what a node does in the market.
type Role string

// The three roles. One binary runs all of them; the role is configuration.
const (
	RoleProvider  Role = "provider"
	RoleRenter    Role = "renter"
	RoleBootstrap Role = "bootstrap"
)

// Roles lists the valid roles.
var Roles = []Role{RoleProvider, RoleRenter, RoleBootstrap}

// Default ports. 4001/5001 belong to IPFS (swarm, API); we stay clear.
const (
	DefaultP2PPort = 7401
	DefaultAPIPort = 7402
)

// Config is the node's configuration: config.toml in the home directory,
// overridden by IDLEGRID_* environment variables, overridden by flags.
type Config struct {
	Role     Role           `toml:"role"`
	P2P      P2PConfig      `toml:"p2p"`
	API      APIConfig      `toml:"api"`
	Log      LogConfig      `toml:"log"`
	GPU      gpu.Config     `toml:"gpu"`
	Provider ProviderConfig `toml:"provider"`
	Executor ExecutorConfig `toml:"executor"`
	Attest   AttestConfig   `toml:"attest"`
	Market   MarketConfig   `toml:"market"`
	Store    StoreConfig    `toml:"store"`

	// Home is the node's home directory; not part of the file.
	Home string `toml:"-"`
}

// P2PConfig configures the libp2p layer.
type P2PConfig struct {
	Listen              []string      `toml:"listen"`
	Announce            []string      `toml:"announce"`
	Bootstrap           []string      `toml:"bootstrap"`
	NAT                 bool          `toml:"nat"`
	ConnLow             int           `toml:"conn_low"`
	ConnHigh            int           `toml:"conn_high"`
	ConnGrace           time.Duration `toml:"conn_grace"`
	ResourceMemoryMiB   int           `toml:"resource_memory_mib"`
	ResourceFDs         int           `toml:"resource_fds"`
	MinPeers            int           `toml:"min_peers"`
	ReconnectMin        time.Duration `toml:"reconnect_min"`
	ReconnectMax        time.Duration `toml:"reconnect_max"`
	GossipMaxMessageKiB int           `toml:"gossip_max_message_kib"`
	GossipHeartbeat     time.Duration `toml:"gossip_heartbeat"`
}

// StoreConfig configures the node's store (<home>/store).
type StoreConfig struct {
	// LowSpaceMiB is the free disk space below which the store refuses
	// writes (store.ErrDiskFull); negative turns the check off.
	LowSpaceMiB int `toml:"low_space_mib"`
	// Salvage moves damaged store files aside before opening (the
	// daemon's --salvage-store); never from the file.
	Salvage bool `toml:"-"`
}

// APIConfig configures the local HTTP API.
type APIConfig struct {
	Listen string `toml:"listen"`
	// Debug exposes /v1/debug/gossip for publishing raw test messages.
	Debug bool `toml:"debug"`
}

// ProviderConfig is what a provider offers, where, when and at what price.
type ProviderConfig struct {
	// Region is the ISO 3166-1 alpha-2 country code, lower case ("de").
	Region string `toml:"region"`
	Zone   string `toml:"zone"`
	// Runtimes offered: docker, wasm.
	Runtimes []string `toml:"runtimes"`
	// Tiers accepted: gold, silver, bronze.
	Tiers []string `toml:"tiers"`
	// FloorUSD is the lowest price per GPU-hour per tier, in USD.
	FloorUSD FloorUSD `toml:"floor_usd"`
	// Calendar lists weekly UTC windows in which work is taken, each
	// "DAYS HH:MM-HH:MM [xFACTOR]" such as "mon-fri 08:00-20:00 x1.5" (peak
	// pricing) or "sat,sun 00:00-24:00 x0.8". Empty: always open at 1.0x.
	Calendar []string `toml:"calendar"`
	// MaxDuration is the longest job accepted (0: no limit).
	MaxDuration time.Duration `toml:"max_duration"`
	// AllowedImages restricts docker images (digest prefixes
	// "sha256:..." or repository patterns "ghcr.io/acme/*"); empty: any.
	AllowedImages []string `toml:"allowed_images"`
	// Egress lets jobs reach the network.
	Egress bool `toml:"egress"`
	// PreemptNotice is the notice promised on bronze bids before their
	// GPUs are taken back for gold or silver work.
	PreemptNotice time.Duration `toml:"preempt_notice"`
	// OfferGPUs lists the GPUs offered, by UUID or index; empty: all.
	OfferGPUs []string `toml:"offer_gpus"`
	// Datasets are CIDs of datasets cached on this host.
	Datasets []string `toml:"datasets"`
	// Host resources offered to jobs; 0 means detect.
	CPUCores      int `toml:"cpu_cores"`
	RAMMiB        int `toml:"ram_mib"`
	DiskGiB       int `toml:"disk_gib"`
	BandwidthMbps int `toml:"bandwidth_mbps"`
	// RecordTTL is how long a published capacity record stays valid;
	// Republish, shorter, is how often it is re-put without changes.
	RecordTTL time.Duration `toml:"record_ttl"`
	Republish time.Duration `toml:"republish"`
}

// ExecutorConfig configures how a provider runs leased work.
type ExecutorConfig struct {
	// StopGrace is how long a cancelled workload gets between SIGTERM and
	// SIGKILL. Preempted work gets the notice promised in its bid instead.
	StopGrace time.Duration `toml:"stop_grace"`
	// KeepResults is how long logs and outputs of finished work stay
	// downloadable.
	KeepResults time.Duration `toml:"keep_results"`
	// DockerHost is the Docker engine address; empty: $DOCKER_HOST or the
	// local socket.
	DockerHost string `toml:"docker_host"`
	// DockerPull lets the provider pull an image it does not have (always
	// by digest).
	DockerPull bool `toml:"docker_pull"`
	// DockerAllowRoot runs images that name no user as root; by default
	// they run as nobody (65534).
	DockerAllowRoot bool `toml:"docker_allow_root"`
	// MaxLogMiB caps one workload's log.
	MaxLogMiB int `toml:"max_log_mib"`
}

// AttestConfig configures telemetry attestations, vouchers and their
// verification.
type AttestConfig struct {
	// Sample is how often a provider reads its GPUs' telemetry.
	Sample time.Duration `toml:"sample"`
	// Window is the span of one signed telemetry attestation (and the
	// heartbeat period on idlegrid/attest/1).
	Window time.Duration `toml:"window"`
	// VoucherInterval is how often a renter pays for a running lease.
	VoucherInterval time.Duration `toml:"voucher_interval"`
	// VoucherGrace is how long past a due voucher a provider keeps working
	// (and a renter keeps paying without fresh telemetry).
	VoucherGrace time.Duration `toml:"voucher_grace"`
	// PrepayIntervals is how many voucher intervals a renter pays ahead at
	// the start of a lease (0: pays after each interval).
	PrepayIntervals int `toml:"prepay_intervals"`
	// EnergyTolerance is the accepted relative gap between reported energy
	// and average power x time.
	EnergyTolerance float64 `toml:"energy_tolerance"`
	// MaxSkew is the accepted clock difference in attestation times.
	MaxSkew time.Duration `toml:"max_skew"`
}

// FloorUSD holds per-tier floor prices in USD per GPU-hour.
type FloorUSD struct {
	Gold   float64 `toml:"gold"`
	Silver float64 `toml:"silver"`
	Bronze float64 `toml:"bronze"`
}

// MarketConfig tunes the renter's view of the market.
type MarketConfig struct {
	// ReliabilityPrior is the reliability assumed for a provider with no
	// history (until reputation evidence exists), 0..1.
	ReliabilityPrior float64 `toml:"reliability_prior"`
	// Refresh: cached capacity records older than this are re-fetched
	// before a search (expired ones always are).
	Refresh time.Duration `toml:"refresh"`
	// SearchTimeout bounds one market search.
	SearchTimeout time.Duration `toml:"search_timeout"`
	// Reauction re-runs the auction of a job whose lease was preempted.
	Reauction bool `toml:"reauction"`
	// GoldNeedsBadge awards gold-tier work only to providers whose
	// reputation earned the gold badge.
	GoldNeedsBadge bool `toml:"gold_needs_badge"`
}

// LogConfig configures logging.
type LogConfig struct {
	Level  string `toml:"level"`
	Format string `toml:"format"`
}

// DefaultConfig returns the defaults for a role.
func DefaultConfig(role Role) Config {
	return Config{
		Role: role,
		P2P: P2PConfig{
			Listen: []string{
				fmt.Sprintf("/ip4/0.0.0.0/tcp/%d", DefaultP2PPort),
				fmt.Sprintf("/ip4/0.0.0.0/udp/%d/quic-v1", DefaultP2PPort),
				fmt.Sprintf("/ip6/::/tcp/%d", DefaultP2PPort),
				fmt.Sprintf("/ip6/::/udp/%d/quic-v1", DefaultP2PPort),
			},
			Announce:            []string{},
			Bootstrap:           []string{},
			NAT:                 role != RoleBootstrap,
			ConnLow:             64,
			ConnHigh:            192,
			ConnGrace:           time.Minute,
			ResourceMemoryMiB:   512,
			ResourceFDs:         4096,
			MinPeers:            8,
			ReconnectMin:        time.Second,
			ReconnectMax:        time.Minute,
			GossipMaxMessageKiB: 256,
			GossipHeartbeat:     time.Second,
		},
		API: APIConfig{Listen: fmt.Sprintf("127.0.0.1:%d", DefaultAPIPort)},
		Log: LogConfig{Level: "info", Format: "text"},
		GPU: gpu.Config{Backend: gpu.BackendAuto, Sim: gpu.SimConfig{Profiles: []string{}}},
		Provider: ProviderConfig{
			Region:        "",
			Runtimes:      []string{"docker", "wasm"},
			Tiers:         []string{"gold", "silver", "bronze"},
			FloorUSD:      FloorUSD{Gold: 3.00, Silver: 2.00, Bronze: 1.20},
			Calendar:      []string{},
			MaxDuration:   7 * 24 * time.Hour,
			PreemptNotice: 2 * time.Minute,
			AllowedImages: []string{},
			OfferGPUs:     []string{},
			Datasets:      []string{},
			RecordTTL:     30 * time.Minute,
			Republish:     10 * time.Minute,
		},
		Executor: ExecutorConfig{
			StopGrace: 10 * time.Second, KeepResults: 24 * time.Hour,
			DockerPull: true, MaxLogMiB: 16,
		},
		Attest: AttestConfig{
			Sample: time.Second, Window: time.Minute,
			VoucherInterval: time.Minute, VoucherGrace: 30 * time.Second,
			EnergyTolerance: 0.15, MaxSkew: 2 * time.Minute,
		},
		Market: MarketConfig{ReliabilityPrior: 0.8, Refresh: 15 * time.Second, SearchTimeout: 15 * time.Second, Reauction: true, GoldNeedsBadge: true},
		Store:  StoreConfig{LowSpaceMiB: store.DefaultLowSpaceMiB},
	}
}

// ConfigError is a configuration problem, located in the file when it
// came from one.
type ConfigError struct {
	File string
	Line int // 0 when unknown or not from the file
	Key  string
	Msg  string
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
		}
		b.WriteString(": ")
	}
	if e.Key != "" {
		fmt.Fprintf(&b, "%s: ", e.Key)
	}
	b.WriteString(e.Msg)
	return b.String()
}

// LoadConfig reads home/config.toml. Unknown keys, type errors and invalid
// values are errors that carry the line number.
func LoadConfig(home string) (Config, error) {
	path := ConfigPath(home)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Config{}, fmt.Errorf("no config at %s: run `idlegrid init --role provider|renter|bootstrap` first: %w", path, ErrNoHome)
	}
	if err != nil {
		return Config{}, fmt.Errorf("read config: %w", err)
	}
	cfg, err := ParseConfig(path, data)
	if err != nil {
		return Config{}, err
	}
	cfg.Home = home
	return cfg, nil
}

// ParseConfig parses config file contents; name is used in errors.
func ParseConfig(name string, data []byte) (Config, error) {
	// Start from the defaults of the role the file names, so a file that
	// omits a key gets the role's default rather than a zero value.
	var probe struct {
		Role Role `toml:"role"`
	}
	if _, err := toml.Decode(string(data), &probe); err != nil {
		return Config{}, tomlError(name, err)
	}
	if probe.Role == "" {
		return Config{}, &ConfigError{File: name, Key: "role", Msg: fmt.Sprintf("missing; want one of %v", Roles)}
	}
	cfg := DefaultConfig(probe.Role)
	md, err := toml.Decode(string(data), &cfg)
	if err != nil {
		return Config{}, tomlError(name, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		key := und[0].String()
		return Config{}, &ConfigError{File: name, Line: lineOfKey(data, key), Key: key, Msg: "unknown key" + suggestKey(key)}
	}
	if err := cfg.Validate(); err != nil {
		var ce *ConfigError
		if errors.As(err, &ce) {
			ce.File = name
			ce.Line = lineOfKey(data, ce.Key)
		}
		return Config{}, err
	}
	return cfg, nil
}

var tomlTypeErr = regexp.MustCompile(`^toml: line (\d+) \(last key "([^"]*)"\): (.*)$`)

func tomlError(name string, err error) error {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		return &ConfigError{File: name, Line: pe.Position.Line, Key: pe.LastKey, Msg: pe.Message}
	}
	// Type mismatches come back as plain errors of the form
	// `toml: line N (last key "k"): msg`.
	if m := tomlTypeErr.FindStringSubmatch(err.Error()); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &ConfigError{File: name, Line: line, Key: m[2], Msg: m[3]}
	}
	return &ConfigError{File: name, Msg: err.Error()}
}

// lineOfKey finds the line where a dotted key ("p2p.conn_low") is set.
func lineOfKey(data []byte, key string) int {
	section, name := "", key
	if i := strings.LastIndexByte(key, '.'); i >= 0 {
		section, name = key[:i], key[i+1:]
	}
	cur := ""
	for i, line := range strings.Split(string(data), "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "[") && strings.HasSuffix(t, "]") {
			cur = strings.Trim(t, "[] ")
			continue
		}
		k, _, ok := strings.Cut(t, "=")
		if ok && cur == section && strings.TrimSpace(k) == name {
			return i + 1
		}
	}
	return 0
}

// configKeys lists every dotted key of Config.
func configKeys() []string {
	var keys []string
	walkConfig(reflect.ValueOf(&Config{}).Elem(), "", func(key string, _ reflect.Value) { keys = append(keys, key) })
	return keys
}

func walkConfig(v reflect.Value, prefix string, fn func(key string, field reflect.Value)) {
	t := v.Type()
	for i := range t.NumField() {
		tag := t.Field(i).Tag.Get("toml")
		if tag == "" || tag == "-" {
			continue
		}
		key := tag
		if prefix != "" {
			key = prefix + "." + tag
		}
		f := v.Field(i)
		if f.Kind() == reflect.Struct {
			walkConfig(f, key, fn)
			continue
		}
		fn(key, f)
	}
}

func suggestKey(key string) string {
	if best, ok := auction.Closest(key, configKeys()); ok {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return ""
}

// Set overrides one key from a string, as environment variables and flags
// do. Lists are comma-separated.
func (c *Config) Set(key, value string) error {
	var target reflect.Value
	walkConfig(reflect.ValueOf(c).Elem(), "", func(k string, f reflect.Value) {
		if k == key {
			target = f
		}
	})
	if !target.IsValid() {
		return &ConfigError{Key: key, Msg: "unknown key" + suggestKey(key)}
	}
	bad := func(err error) error {
		return &ConfigError{Key: key, Msg: fmt.Sprintf("invalid value %q: %v", value, err)}
	}
	switch target.Interface().(type) {
	case time.Duration:
		d, err := time.ParseDuration(value)
		if err != nil {
			return bad(err)
		}
		target.SetInt(int64(d))
		return nil
	}
	switch target.Kind() {
	case reflect.String:
		target.SetString(value)
	case reflect.Bool:
		b, err := strconv.ParseBool(value)
		if err != nil {
			return bad(err)
		}
		target.SetBool(b)
	case reflect.Int:
		n, err := strconv.Atoi(value)
		if err != nil {
			return bad(err)
		}
		target.SetInt(int64(n))
	case reflect.Uint64:
		n, err := strconv.ParseUint(value, 10, 64)
		if err != nil {
			return bad(err)
		}
		target.SetUint(n)
	case reflect.Float64:
		f, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return bad(err)
		}
		target.SetFloat(f)
	case reflect.Slice:
		// A TOML array ("[\"mon-fri 08:00-20:00\", \"sat,sun ...\"]") keeps
		// commas inside entries; otherwise entries are comma-separated.
		if strings.HasPrefix(strings.TrimSpace(value), "[") {
			var arr struct{ V []string }
			if _, err := toml.Decode("V = "+value, &arr); err != nil {
				return bad(err)
			}
			target.Set(reflect.ValueOf(arr.V))
			return nil
		}
		parts := []string{}
		for _, p := range strings.Split(value, ",") {
			if p = strings.TrimSpace(p); p != "" {
				parts = append(parts, p)
			}
		}
		target.Set(reflect.ValueOf(parts))
	default:
		return bad(fmt.Errorf("unsupported kind %s", target.Kind()))
	}
	return nil
}

// EnvName is the environment variable that overrides a key:
// "p2p.conn_low" -> IDLEGRID_P2P_CONN_LOW.
func EnvName(key string) string {
	return "IDLEGRID_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// ApplyEnv applies IDLEGRID_* overrides from lookup (os.LookupEnv).
func (c *Config) ApplyEnv(lookup func(string) (string, bool)) error {
	for _, key := range configKeys() {
		if v, ok := lookup(EnvName(key)); ok {
			if err := c.Set(key, v); err != nil {
				var ce *ConfigError
				if errors.As(err, &ce) {
					ce.File = "environment " + EnvName(key)
				}
				return err
			}
		}
	}
	return c.Validate()
}

// BootstrapPeers parses p2p.bootstrap; every entry needs a /p2p/ peer ID.
func (c *Config) BootstrapPeers() ([]peer.AddrInfo, error) {
	var addrs []ma.Multiaddr
	for _, s := range c.P2P.Bootstrap {
		a, err := ma.NewMultiaddr(s)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", s, err)
		}
		if _, err := a.ValueForProtocol(ma.P_P2P); err != nil {
			return nil, fmt.Errorf("%q: a bootstrap address must end in /p2p/<peer ID>", s)
		}
		addrs = append(addrs, a)
	}
	infos, err := peer.AddrInfosFromP2pAddrs(addrs...)
	if err != nil {
		return nil, err
	}
	return infos, nil
}
