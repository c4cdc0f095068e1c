package node

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"text/template"
	"time"
)

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
# A bid reserves nothing: it is an offer subject to availability, re-checked
# when the award comes. Only renters this host holds a paid receipt from get
# a firm hold on their bid's GPUs, for firm_hold ("0s": never) and on at
# most firm_hold_gpus GPUs per renter at once.
firm_hold = {{dur .Provider.FirmHold}}
firm_hold_gpus = {{.Provider.FirmHoldGPUs}}
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
# Bids an RFQ asks for (1..64): the cheapest providers of each shard always
# bid, the others by lot, so an auction costs the same at any network size.
want_bids = {{.Market.WantBids}}
# A running lease whose provider stays silent this long is failed as
# unreachable, and its work re-auctioned when reauction is on (0s: only
# past the lease's end).
provider_timeout = {{dur .Market.ProviderTimeout}}

[store]
# Free disk space (MiB) below which the store refuses writes and a provider
# stops taking leases; -1 turns the check off.
low_space_mib = {{.Store.LowSpaceMiB}}

[costs]
# What running this provider costs, for 'idlegrid earnings' (net margin per
# day and GPU) and 'idlegrid advise' (break-even floors). Zero: no such cost.
# Time zone of the tariff and of the earnings days (IANA; empty: UTC).
time_zone = {{q .Costs.TimeZone}}
# Electricity at the wall, USD per kWh, and time-of-use windows in local time,
# "DAYS HH:MM-HH:MM PRICE" (first match wins; split a night at 24:00).
price_kwh = {{f .Costs.PriceKWh}}
windows = {{list .Costs.Windows}}
# Power usage effectiveness (cooling): wall energy / IT energy; 0 means 1.
pue = {{f .Costs.PUE}}
# The host's draw beyond its GPUs, in watts.
host_idle_w = {{f .Costs.HostIdleW}}
# Internet line per month (30 days), USD; fees as a percentage of revenue.
bandwidth_usd_month = {{f .Costs.BandwidthUSDMonth}}
fee_pct = {{f .Costs.FeePct}}
# Capital cost of one GPU with its share of the host, written off straight-line.
gpu_capital_usd = {{f .Costs.GPUCapitalUSD}}
depreciation_years = {{f .Costs.DepreciationYears}}
# Per-model overrides, by model slug:
# [[costs.models]]
# model = "h100-80gb"
# capital_usd = 30000.0
# depreciation_years = 4.0
{{- range .Costs.Models}}

[[costs.models]]
model = {{q .Model}}
capital_usd = {{f .CapitalUSD}}
depreciation_years = {{f .DepreciationYears}}
{{- end}}
`))
