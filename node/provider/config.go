package provider

import "time"

// OfferConfig is what a provider offers, where, when and at what price
// ([provider] in config.toml).
type OfferConfig struct {
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
	// FirmHold is how long a bid's GPUs are reserved for a renter that
	// this provider has a paid receipt from; other renters' bids hold
	// nothing (they are offers subject to availability, re-checked at the
	// award). It is the provider's cap, whatever the renter's bid window;
	// 0 turns firm holds off.
	FirmHold time.Duration `toml:"firm_hold"`
	// FirmHoldGPUs bounds the GPUs under firm hold for one renter at once.
	FirmHoldGPUs int `toml:"firm_hold_gpus"`
	// OfferGPUs lists the GPUs offered, by UUID or index; empty: all.
	OfferGPUs []string `toml:"offer_gpus"`
	// Datasets are CIDs of datasets cached on this host.
	Datasets []string `toml:"datasets"`
	// Models are IDs (a CID, or name@sha256:<hex>) of models on this
	// host's disk; ModelsDir is a directory whose entries named by a
	// model ID are advertised too (models.go). Renters prefer a provider
	// that holds the model a job serves: it starts without a download.
	Models    []string `toml:"models"`
	ModelsDir string   `toml:"models_dir"`
	// PrestageCommand, when set with ModelsDir, fetches into it the
	// models at least PrestageMinRenters renters asked for within a day,
	// of at most PrestageMaxGiB, at most PrestagePerDay a day
	// (prestage.go). The argv gets the model ID, its size in MiB and
	// ModelsDir appended.
	PrestageCommand    []string `toml:"prestage_command"`
	PrestageMinRenters int      `toml:"prestage_min_renters"`
	PrestageMaxGiB     int      `toml:"prestage_max_gib"`
	PrestagePerDay     int      `toml:"prestage_per_day"`
	// CPUShare is the share (0..1) of the host's cores and RAM offered to
	// CPU-only jobs (gpus: 0), which lease it without a GPU; 0 offers
	// none. CPUFloorUSD is its lowest price per core-hour, in USD.
	CPUShare    float64 `toml:"cpu_share"`
	CPUFloorUSD float64 `toml:"cpu_floor_usd"`
	// CPUBesideGPUs offers the CPU share on a host with GPUs too. Off by
	// default: CPU-only jobs would take the cores the host's GPU jobs
	// feed their GPUs with (renters then see free GPUs no provider can
	// bid on), and the CPU shard every such host joins would carry the
	// digests of nearly every provider (docs/benchmarks.md, issue 26).
	CPUBesideGPUs bool `toml:"cpu_beside_gpus"`
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

// FloorUSD holds per-tier floor prices in USD per GPU-hour.
type FloorUSD struct {
	Gold   float64 `toml:"gold"`
	Silver float64 `toml:"silver"`
	Bronze float64 `toml:"bronze"`
}
