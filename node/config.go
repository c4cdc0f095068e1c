package node

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/costs"
	"github.com/idlegrid/idlegrid/node/gpu"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/node/provider"
	"github.com/idlegrid/idlegrid/node/trust"
	"github.com/idlegrid/idlegrid/store"
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
	Costs    costs.Config   `toml:"costs"`

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
	// TelemetryGossipEvery is how often a provider gossips a heartbeat
	// (attest.BeatSlot): a network-wide agreement, like the gossip
	// parameters, that every node of a network sets alike.
	TelemetryGossipEvery time.Duration `toml:"telemetry_gossip_every"`
	// FraudRepeatEvery: a fraud proof this node holds for good that
	// nobody was heard publishing this long is published again, for the
	// nodes that missed it (trust.Config.FraudRepeatEvery).
	FraudRepeatEvery time.Duration `toml:"fraud_repeat_every"`
	// RelayCircuitDuration and RelayCircuitKiB limit each connection a
	// bootstrap peer relays (p2p.RelayConfig); both 0: unlimited.
	RelayCircuitDuration time.Duration `toml:"relay_circuit_duration"`
	RelayCircuitKiB      int           `toml:"relay_circuit_kib"`
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

// ProviderConfig is what a provider offers, where, when and at what
// price ([provider] in config.toml).
type ProviderConfig = provider.OfferConfig

// ExecutorConfig configures how a provider runs leased work.
type ExecutorConfig = provider.ExecutorConfig

// AttestConfig configures telemetry attestations, vouchers and their
// verification: the terms both sides of a lease apply.
type AttestConfig = lease.Terms

// FloorUSD holds per-tier floor prices in USD per GPU-hour.
type FloorUSD = provider.FloorUSD

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
	// ProviderTimeout is how long a running lease's provider may stay
	// silent before the renter fails the lease as unreachable and, with
	// Reauction, auctions the work again.
	ProviderTimeout time.Duration `toml:"provider_timeout"`
	// CanaryRate is the share (0..1) of deterministic jobs (WASM, no
	// network, not a service) re-run on a second provider whose output
	// must match; 0: none.
	CanaryRate float64 `toml:"canary_rate"`
	// WantBids is how many bids an RFQ for a one-GPU job asks for, two
	// more for each further GPU (auction.WantBidsFor; bounded bidding:
	// the cheapest providers always bid, the others by lot, so an auction
	// costs the same whatever the network's size).
	WantBids int `toml:"want_bids"`
	// MaxWait is how long this renter keeps auctioning a job for which
	// no auction found a plan (no bid, or none it could take), counted
	// from submission; a job's start_by replaces it; 0: unfilled at once.
	MaxWait time.Duration `toml:"max_wait"`
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
			Announce:             []string{},
			Bootstrap:            []string{},
			NAT:                  role != RoleBootstrap,
			ConnLow:              64,
			ConnHigh:             192,
			ConnGrace:            time.Minute,
			ResourceMemoryMiB:    512,
			ResourceFDs:          4096,
			MinPeers:             8,
			ReconnectMin:         time.Second,
			ReconnectMax:         time.Minute,
			GossipMaxMessageKiB:  256,
			GossipHeartbeat:      time.Second,
			TelemetryGossipEvery: attest.DefaultBeatEvery,
			FraudRepeatEvery:     trust.DefaultFraudRepeatEvery,
			// relay v2's own defaults: signalling and hole punching only.
			RelayCircuitDuration: 2 * time.Minute,
			RelayCircuitKiB:      128,
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
			FirmHold:      2 * time.Second,
			FirmHoldGPUs:  8,
			AllowedImages: []string{},
			OfferGPUs:     []string{},
			Datasets:      []string{},
			Models:        []string{},
			CPUShare:      0.5,
			CPUFloorUSD:   0.02,
			RecordTTL:     30 * time.Minute,
			Republish:     10 * time.Minute,
			// Pre-staging is off until a command is set.
			PrestageCommand:    []string{},
			PrestageMinRenters: 3,
			PrestageMaxGiB:     200,
			PrestagePerDay:     2,
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
		Market: MarketConfig{ReliabilityPrior: 0.8, Refresh: 15 * time.Second, SearchTimeout: 15 * time.Second, Reauction: true, GoldNeedsBadge: true, WantBids: 16, ProviderTimeout: 10 * time.Second, MaxWait: auction.DefaultMaxWait},
		Store:  StoreConfig{LowSpaceMiB: store.DefaultLowSpaceMiB},
		Costs:  costs.Config{Windows: []string{}},
	}
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
	bad := func(want string) error {
		return &ConfigError{Key: key, Msg: fmt.Sprintf("%q: want %s", value, want)}
	}
	switch target.Interface().(type) {
	case time.Duration:
		d, err := time.ParseDuration(value)
		if err != nil {
			return &ConfigError{Key: key, Msg: badDuration(value)}
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
			return bad("true or false")
		}
		target.SetBool(b)
	case reflect.Int:
		n, err := strconv.Atoi(value)
		if err != nil {
			return bad("a whole number")
		}
		target.SetInt(int64(n))
	case reflect.Uint64:
		n, err := strconv.ParseUint(value, 10, 64)
		if err != nil {
			return bad("a whole number, 0 or more")
		}
		target.SetUint(n)
	case reflect.Float64:
		f, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return bad("a number, such as 1.5")
		}
		target.SetFloat(f)
	case reflect.Slice:
		// A TOML array ("[\"mon-fri 08:00-20:00\", \"sat,sun ...\"]") keeps
		// commas inside entries; otherwise entries are comma-separated.
		if strings.HasPrefix(strings.TrimSpace(value), "[") {
			var arr struct{ V []string }
			if _, err := toml.Decode("V = "+value, &arr); err != nil {
				return bad(`a list of quoted strings, such as ["a", "b"], or comma-separated values`)
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
		return &ConfigError{Key: key, Msg: "cannot be set from a flag or the environment; edit config.toml"}
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
			return nil, fmt.Errorf("%q is not a multiaddr, such as /ip4/203.0.113.7/tcp/%d/p2p/12D3KooW…", s, DefaultP2PPort)
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
