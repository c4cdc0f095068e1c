package node

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/gpu"
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

// Validate checks every value and returns the first problem, naming its key.
func (c *Config) Validate() error {
	bad := func(key, format string, a ...any) error {
		return &ConfigError{Key: key, Msg: fmt.Sprintf(format, a...)}
	}
	if !slices.Contains(Roles, c.Role) {
		return bad("role", "%q is not a role; want one of %v", c.Role, Roles)
	}
	for _, s := range c.P2P.Listen {
		if _, err := ma.NewMultiaddr(s); err != nil {
			return bad("p2p.listen", "%q: %v", s, err)
		}
	}
	if len(c.P2P.Listen) == 0 {
		return bad("p2p.listen", "at least one listen address is required")
	}
	for _, s := range c.P2P.Announce {
		if _, err := ma.NewMultiaddr(s); err != nil {
			return bad("p2p.announce", "%q: %v", s, err)
		}
	}
	if _, err := c.BootstrapPeers(); err != nil {
		return bad("p2p.bootstrap", "%v", err)
	}
	switch {
	case c.P2P.ConnLow <= 0 || c.P2P.ConnHigh < c.P2P.ConnLow:
		return bad("p2p.conn_high", "need 0 < conn_low (%d) <= conn_high (%d)", c.P2P.ConnLow, c.P2P.ConnHigh)
	case c.P2P.ResourceMemoryMiB < 64:
		return bad("p2p.resource_memory_mib", "%d MiB is too little; at least 64", c.P2P.ResourceMemoryMiB)
	case c.P2P.ResourceFDs < 64:
		return bad("p2p.resource_fds", "%d is too few; at least 64", c.P2P.ResourceFDs)
	case c.P2P.ReconnectMin <= 0 || c.P2P.ReconnectMax < c.P2P.ReconnectMin:
		return bad("p2p.reconnect_max", "need 0 < reconnect_min (%s) <= reconnect_max (%s)", c.P2P.ReconnectMin, c.P2P.ReconnectMax)
	case c.P2P.GossipMaxMessageKiB < 1 || c.P2P.GossipMaxMessageKiB > 4096:
		return bad("p2p.gossip_max_message_kib", "%d: must be 1..4096", c.P2P.GossipMaxMessageKiB)
	case c.P2P.GossipHeartbeat < 10*time.Millisecond:
		return bad("p2p.gossip_heartbeat", "%s is too short", c.P2P.GossipHeartbeat)
	case c.P2P.MinPeers < 0:
		return bad("p2p.min_peers", "must not be negative")
	}
	if c.API.Listen != "" {
		if _, _, err := net.SplitHostPort(c.API.Listen); err != nil {
			return bad("api.listen", "%q: want host:port, for example 127.0.0.1:%d", c.API.Listen, DefaultAPIPort)
		}
	}
	if err := c.validateMarket(); err != nil {
		return err
	}
	switch a := c.Attest; {
	case a.Sample < 10*time.Millisecond || a.Window < a.Sample:
		return bad("attest.window", "need 10ms <= sample (%s) <= window (%s)", a.Sample, a.Window)
	case a.VoucherInterval < 10*time.Millisecond || a.VoucherGrace < 0:
		return bad("attest.voucher_interval", "%s: too short (grace %s)", a.VoucherInterval, a.VoucherGrace)
	case a.PrepayIntervals < 0 || a.PrepayIntervals > 100:
		return bad("attest.prepay_intervals", "%d: must be 0..100", a.PrepayIntervals)
	case a.EnergyTolerance <= 0 || a.EnergyTolerance > 1:
		return bad("attest.energy_tolerance", "%v: must be in (0, 1]", a.EnergyTolerance)
	case a.MaxSkew < 0:
		return bad("attest.max_skew", "must not be negative")
	}
	switch e := c.Executor; {
	case e.StopGrace < 0 || e.StopGrace > 10*time.Minute:
		return bad("executor.stop_grace", "%s: must be 0..10m", e.StopGrace)
	case e.KeepResults < time.Minute:
		return bad("executor.keep_results", "%s is too short; at least 1m so renters can fetch results", e.KeepResults)
	case e.MaxLogMiB < 1 || e.MaxLogMiB > 1024:
		return bad("executor.max_log_mib", "%d: must be 1..1024", e.MaxLogMiB)
	}
	if _, err := parseLevel(c.Log.Level); err != nil {
		return bad("log.level", "%v", err)
	}
	if c.Log.Format != "text" && c.Log.Format != "json" {
		return bad("log.format", "%q: want text or json", c.Log.Format)
	}
	return nil
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

// Encode renders the config as a commented TOML file with every value
// written out.
func (c *Config) Encode() ([]byte, error) {
	var buf bytes.Buffer
	if err := configTemplate.Execute(&buf, c); err != nil {
		return nil, fmt.Errorf("render config: %w", err)
	}
	return buf.Bytes(), nil
}

var configTemplate = template.Must(template.New("config").Funcs(template.FuncMap{
	"list": func(xs []string) string {
		q := make([]string, len(xs))
		for i, x := range xs {
			q[i] = strconv.Quote(x)
		}
		return "[" + strings.Join(q, ", ") + "]"
	},
	"q":   strconv.Quote,
	"dur": func(d time.Duration) string { return strconv.Quote(d.String()) },
	// Floats always carry a decimal point, so TOML reads them back as floats.
	"f": func(x float64) string {
		s := strconv.FormatFloat(x, 'f', -1, 64)
		if !strings.ContainsAny(s, ".eE") {
			s += ".0"
		}
		return s
	},
}).Parse(`# idlegrid node configuration.
# Every key is written out with its default. Any key can be overridden by an
# environment variable IDLEGRID_<SECTION>_<KEY> (for example
# IDLEGRID_API_LISTEN=127.0.0.1:7502) and by daemon flags.

# What this node does: provider (rents out GPUs), renter (rents GPUs),
# or bootstrap (a well-known entry point that helps peers find each other).
role = {{q (printf "%s" .Role)}}

[p2p]
# Multiaddresses to listen on (TCP and QUIC-v1). 7401 stays clear of IPFS's 4001.
listen = {{list .P2P.Listen}}
# Addresses to advertise instead of the detected ones (a datacenter host with
# a known public IP). Empty: detect.
announce = {{list .P2P.Announce}}
# Bootstrap peers as multiaddresses ending in /p2p/<peer ID>. They seed the
# DHT and are always redialed. Peers met later are remembered in the store.
bootstrap = {{list .P2P.Bootstrap}}
# NAT traversal for providers and renters behind a router: UPnP/NAT-PMP port
# mapping, hole punching, AutoNAT and relays learnt from bootstrap peers.
# Ignored on bootstrap peers, which must be publicly reachable.
nat = {{.P2P.NAT}}
# Connection manager water marks: above conn_high, trim down to conn_low.
conn_low = {{.P2P.ConnLow}}
conn_high = {{.P2P.ConnHigh}}
# New connections are safe from trimming for this long.
conn_grace = {{dur .P2P.ConnGrace}}
# Resource manager budget for libp2p (memory in MiB, file descriptors).
resource_memory_mib = {{.P2P.ResourceMemoryMiB}}
resource_fds = {{.P2P.ResourceFDs}}
# Below this many connected idlegrid peers, redial remembered peers too.
min_peers = {{.P2P.MinPeers}}
# Backoff between redials of a lost peer: doubles from min up to max.
reconnect_min = {{dur .P2P.ReconnectMin}}
reconnect_max = {{dur .P2P.ReconnectMax}}
# Largest gossip message accepted, in KiB.
gossip_max_message_kib = {{.P2P.GossipMaxMessageKiB}}
# Gossipsub heartbeat (mesh maintenance) interval.
gossip_heartbeat = {{dur .P2P.GossipHeartbeat}}

[api]
# Local HTTP API (bearer token in api.token). Keep it on loopback.
listen = {{q .API.Listen}}
# Expose /v1/debug/gossip to publish raw test messages. Off in production.
debug = {{.API.Debug}}

[log]
# debug, info, warn or error.
level = {{q .Log.Level}}
# text or json.
format = {{q .Log.Format}}

[gpu]
# Where GPU facts and telemetry come from: auto (NVML when the driver loads,
# else no GPUs), nvml, sim (simulated GPUs, for devnets and tests) or none.
backend = {{q .GPU.Backend}}
# Library go-nvml loads; empty: libnvidia-ml.so.1.
nvml_library_path = {{q .GPU.NVMLLibraryPath}}

[gpu.sim]
# Simulated GPUs, one profile per device: h100-sxm-80gb, a100-sxm-80gb, l40s,
# rtx-4090, a10, t4. Used only with backend = "sim".
profiles = {{list .GPU.Sim.Profiles}}
seed = {{.GPU.Sim.Seed}}
driver_version = {{q .GPU.Sim.DriverVersion}}
cuda_version = {{q .GPU.Sim.CUDAVersion}}

[provider]
# Country (ISO 3166-1 alpha-2, lower case) and optional zone of this host.
# Required for providers: renters filter on it.
region = {{q .Provider.Region}}
zone = {{q .Provider.Zone}}
# Runtimes offered to jobs (docker, wasm).
runtimes = {{list .Provider.Runtimes}}
# Tiers accepted: gold (reserved), silver (on-demand), bronze (interruptible).
tiers = {{list .Provider.Tiers}}
# Weekly availability windows in UTC with a price factor, for example
# ["mon-fri 08:00-20:00 x1.5", "mon-fri 20:00-24:00 x1.0", "sat,sun 00:00-24:00 x0.8"].
# Empty: always open at the floor price.
calendar = {{list .Provider.Calendar}}
# Longest job accepted; "0s" for no limit.
max_duration = {{dur .Provider.MaxDuration}}
# Docker images allowed: digest prefixes ("sha256:...") or repository
# patterns ("ghcr.io/acme/*"). Empty: any image.
allowed_images = {{list .Provider.AllowedImages}}
# Whether jobs may reach the network.
egress = {{.Provider.Egress}}
# Notice promised to bronze (interruptible) leases before their GPUs are taken
# back for gold or silver work.
preempt_notice = {{dur .Provider.PreemptNotice}}
# GPUs offered, by UUID or index. Empty: all of them.
offer_gpus = {{list .Provider.OfferGPUs}}
# CIDs of datasets cached on this host (renters can look for them).
datasets = {{list .Provider.Datasets}}
# Host resources offered to jobs; 0 means detect.
cpu_cores = {{.Provider.CPUCores}}
ram_mib = {{.Provider.RAMMiB}}
disk_gib = {{.Provider.DiskGiB}}
bandwidth_mbps = {{.Provider.BandwidthMbps}}
# A published capacity record is valid for record_ttl and re-published every
# republish (and at once whenever a GPU is leased or freed).
record_ttl = {{dur .Provider.RecordTTL}}
republish = {{dur .Provider.Republish}}

[provider.floor_usd]
# Lowest price per GPU-hour, in USD, for each tier.
gold = {{f .Provider.FloorUSD.Gold}}
silver = {{f .Provider.FloorUSD.Silver}}
bronze = {{f .Provider.FloorUSD.Bronze}}

[executor]
# Grace between SIGTERM and SIGKILL when a renter cancels (preempted work gets
# the notice promised in its bid).
stop_grace = {{dur .Executor.StopGrace}}
# How long logs and outputs of finished work stay downloadable.
keep_results = {{dur .Executor.KeepResults}}
# Docker engine address; empty: $DOCKER_HOST or the local socket. Without a
# reachable engine the docker runtime is not offered.
docker_host = {{q .Executor.DockerHost}}
# Pull images that are not on this host (always by digest).
docker_pull = {{.Executor.DockerPull}}
# Run images that name no user as root (default: as nobody, uid 65534).
docker_allow_root = {{.Executor.DockerAllowRoot}}
# Largest log kept per workload, in MiB.
max_log_mib = {{.Executor.MaxLogMiB}}

[attest]
# Providers read GPU telemetry every sample and sign one attestation per
# window (also their heartbeat on idlegrid/attest/1).
sample = {{dur .Attest.Sample}}
window = {{dur .Attest.Window}}
# Renters verify telemetry and sign a cumulative voucher every
# voucher_interval; providers stop work whose voucher is voucher_grace late,
# and renters stop paying when telemetry is that late.
voucher_interval = {{dur .Attest.VoucherInterval}}
voucher_grace = {{dur .Attest.VoucherGrace}}
# Voucher intervals a renter pays ahead when a lease starts.
prepay_intervals = {{.Attest.PrepayIntervals}}
# Verifier tolerances: energy vs average power x time, clock skew.
energy_tolerance = {{f .Attest.EnergyTolerance}}
max_skew = {{dur .Attest.MaxSkew}}

[market]
# Reliability assumed for providers with no history yet (0..1).
reliability_prior = {{f .Market.ReliabilityPrior}}
# Cached capacity records older than this are re-fetched before a search.
refresh = {{dur .Market.Refresh}}
# Upper bound on one market search.
search_timeout = {{dur .Market.SearchTimeout}}
# Re-auction a job automatically when a provider preempts its (bronze) lease.
reauction = {{.Market.Reauction}}
# Award gold-tier work only to providers with the gold reputation badge
# (score x volume; see idlegrid rep).
gold_needs_badge = {{.Market.GoldNeedsBadge}}
`))
