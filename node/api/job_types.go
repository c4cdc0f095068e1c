package api

import (
	"time"

	"github.com/idlegrid/idlegrid/attest"
)

// Job is a renter's job as the API shows it.
type Job struct {
	ID   string `json:"id"` // one submission's ID (not the spec's CID)
	Name string `json:"name,omitempty"`
	// SpecCID is the CID of the job spec that leases carry; empty on jobs
	// stored before it was recorded (their ID is the spec CID).
	SpecCID   string     `json:"spec_cid,omitempty"`
	State     string     `json:"state"`
	Reason    string     `json:"reason,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
	UpdatedAt time.Time  `json:"updated_at"`
	RFQs      []string   `json:"rfqs,omitempty"`
	Leases    []Lease    `json:"leases,omitempty"`
	Events    []JobEvent `json:"events,omitempty"`
	// Forwards are a service job's running forwards (job forward).
	Forwards []Forward `json:"forwards,omitempty"`
	// Endpoint is a service job's endpoint over its replicas (job endpoint).
	Endpoint *Endpoint `json:"endpoint,omitempty"`
}

// SubmitOptions are the optional parts of a job submission.
type SubmitOptions struct {
	// IdempotencyKey (HTTP header Idempotency-Key) makes a retried submit
	// safe: the daemon returns the job an earlier submit with the same key
	// made, instead of starting another.
	IdempotencyKey string
}

// IdempotencyKeyHeader carries SubmitOptions.IdempotencyKey on POST /v1/jobs.
const IdempotencyKeyHeader = "Idempotency-Key"

// Terminal reports whether the job will not change state again.
func (j Job) Terminal() bool {
	switch j.State {
	case "completed", "failed", "unfilled", "cancelled", "expired", "unverified":
		return true
	}
	return false
}

// JobEvent is one step of a job: "rfq", "bid", "award", "lease",
// "decline", "preempted", "completed", ...
type JobEvent struct {
	At      time.Time `json:"at"`
	Kind    string    `json:"kind"`
	Message string    `json:"message"`
	// BestPriceUSD is the lowest asked price seen so far (bid events).
	BestPriceUSD float64 `json:"best_price_usd,omitempty"`
	Bids         int     `json:"bids,omitempty"`
}

// Lease is one side's view of a lease.
type Lease struct {
	ID        string    `json:"id"`
	Side      string    `json:"side"`
	JobID     string    `json:"job"`
	Renter    string    `json:"renter"`
	Provider  string    `json:"provider"`
	GPUs      []string  `json:"gpus"`
	PriceUSD  float64   `json:"price_usd_per_gpu_hour"`
	Tier      string    `json:"tier"`
	State     string    `json:"state"`
	Reason    string    `json:"reason,omitempty"`
	StartsAt  time.Time `json:"starts_at"`
	EndsAt    time.Time `json:"ends_at"`
	PreemptAt time.Time `json:"preempt_at,omitzero"`
	NoticeSec uint32    `json:"notice_s,omitempty"`
	Runtime   string    `json:"runtime,omitempty"`
	// The work, once it ran.
	ExitCode   *int      `json:"exit_code,omitempty"`
	StartedAt  time.Time `json:"started_at,omitzero"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
	OutputCID  string    `json:"output_cid,omitempty"`
	OutputSize int64     `json:"output_size,omitempty"`
	LogBytes   int64     `json:"log_bytes,omitempty"`
	// Artifact and Run are what ran, as the provider's signed finished
	// event names it (the module's CID or the image's ID, and the
	// settings that can change the result); the renter records them when
	// it verifies the completion, the provider when it prepares the work.
	Artifact string              `json:"artifact,omitempty"`
	Run      *attest.RunSettings `json:"run,omitempty"`
	// Payment: what this side's latest voucher for the lease covers, and
	// the CID of the provider's sealed receipt once this side holds it.
	PaidUSD    float64   `json:"paid_usd,omitempty"`
	PaidUntil  time.Time `json:"paid_until,omitzero"`
	ReceiptCID string    `json:"receipt_cid,omitempty"`
	// Health is a service lease's health verdict (starting, healthy,
	// unhealthy); empty for batch work.
	Health string `json:"health,omitempty"`
}

// Result is a job's downloaded output: a tar file addressed by CID.
type Result struct {
	Lease string `json:"lease"`
	CID   string `json:"cid"`
	Size  int64  `json:"size"`
	// Path is the verified tar in the node's cache.
	Path string `json:"-"`
}

// Headers of GET /v1/jobs/{id}/result.
const (
	HeaderCID   = "X-Idlegrid-Cid"
	HeaderLease = "X-Idlegrid-Lease"
)

// Artifact is the answer of POST /v1/artifacts.
type Artifact struct {
	CID string `json:"cid"`
	// Bytes and AddedAt are set in listings (GET /v1/artifacts).
	Bytes   int64     `json:"bytes,omitempty"`
	AddedAt time.Time `json:"added_at,omitzero"`
}

// PriceStat is one row of the market price index.
type PriceStat struct {
	Model     string  `json:"model"`
	Tier      string  `json:"tier"`
	Awards    int     `json:"awards"`
	GPUs      int     `json:"gpus"`
	MedianUSD float64 `json:"median_usd"`
	P10USD    float64 `json:"p10_usd"`
	P90USD    float64 `json:"p90_usd"`
}

// Prices is GET /v1/market/prices.
type Prices struct {
	Window string      `json:"window"`
	Since  time.Time   `json:"since"`
	Stats  []PriceStat `json:"stats"`
}

// CodeBadSpec marks a job spec that does not parse or validate.
const CodeBadSpec = "bad_spec"

// Reputation is one provider's score as this node computes it from its
// own evidence (GET /v1/reputation, /v1/reputation/{peer}).
type Reputation struct {
	Provider string  `json:"provider"`
	Score    float64 `json:"score"`
	Badge    string  `json:"badge"`
	Fraud    bool    `json:"fraud,omitempty"`
	// Evidence counts.
	OwnSuccesses    int     `json:"own_successes"`
	OwnFailures     int     `json:"own_failures"`
	OwnNeutral      int     `json:"own_neutral"`
	GossipSuccesses int     `json:"gossip_successes"`
	GossipFailures  int     `json:"gossip_failures"`
	GossipIgnored   int     `json:"gossip_ignored,omitempty"`
	UptimeWindows   int     `json:"uptime_windows"`
	UptimeRatio     float64 `json:"uptime_ratio"`
	GPUHours        float64 `json:"effective_gpu_hours"`
}

// Earnings is a provider's income, costs and fill rate (GET
// /v1/earnings). Days are local days of the [costs] time zone.
type Earnings struct {
	Since  time.Time `json:"since"`
	Until  time.Time `json:"until"`
	FeePct float64   `json:"fee_pct"` // costs.fee_pct, for floor advice
	// CostsSet is false when [costs] prices nothing: every cost below is
	// then unknown (shown as 0), and net is income alone.
	CostsSet bool    `json:"costs_set"`
	TimeZone string  `json:"time_zone"`
	TotalUSD float64 `json:"total_usd"`
	FillRate float64 `json:"fill_rate"` // leased GPU-hours / offered GPU-hours: the utilization
	EarningsCosts
	Days []EarningsDay `json:"days"`
	GPUs []EarningsGPU `json:"gpus"`
}

// EarningsCosts is what earning cost ([costs] in config.toml), priced from
// the provider's own signed telemetry; NetUSD is the income less all of it.
type EarningsCosts struct {
	FeesUSD         float64 `json:"fees_usd"`
	EnergyKWh       float64 `json:"energy_kwh"` // at the wall: (GPUs + host) × PUE
	EnergyUSD       float64 `json:"energy_usd"`
	DepreciationUSD float64 `json:"depreciation_usd"`
	BandwidthUSD    float64 `json:"bandwidth_usd"`
	NetUSD          float64 `json:"net_usd"`
}

// EarningsDay is one day of a provider's earnings.
type EarningsDay struct {
	Day             string  `json:"day"` // YYYY-MM-DD in the costs time zone (UTC by default)
	Leases          int     `json:"leases"`
	EarnedUSD       float64 `json:"earned_usd"`
	LeasedGPUHours  float64 `json:"leased_gpu_hours"`
	OfferedGPUHours float64 `json:"offered_gpu_hours"`
	FillRate        float64 `json:"fill_rate"`
	EarningsCosts
}

// EarningsGPU is one GPU's share.
type EarningsGPU struct {
	UUID      string  `json:"uuid"`
	Model     string  `json:"model,omitempty"`
	EarnedUSD float64 `json:"earned_usd"`
	// HostEnergyUSD is the GPU's share of the host's energy cost and
	// LeasedEnergyUSD its own while leased (both inside EnergyUSD).
	HostEnergyUSD   float64 `json:"host_energy_usd"`
	LeasedEnergyUSD float64 `json:"leased_energy_usd"`
	LeasedGPUHours  float64 `json:"leased_gpu_hours"`
	OfferedGPUHours float64 `json:"offered_gpu_hours"`
	FillRate        float64 `json:"fill_rate"`
	EarningsCosts
}

// Spend is a renter's spending (GET /v1/spend).
type Spend struct {
	Since    time.Time  `json:"since"`
	TotalUSD float64    `json:"total_usd"`
	Days     []SpendDay `json:"days"`
	// Services are the services with a lease in the window whose
	// endpoint served tokens, the costliest first.
	Services []SpendService `json:"services,omitempty"`
}

// SpendService is one service's tokens and what they cost: what every
// lease of the job paid over every token its endpoints served.
type SpendService struct {
	Job              string  `json:"job"`
	Name             string  `json:"name,omitempty"`
	PromptTokens     uint64  `json:"prompt_tokens"`
	CompletionTokens uint64  `json:"completion_tokens"`
	SpentUSD         float64 `json:"spent_usd"`
	USDPerMTok       float64 `json:"usd_per_mtok"`
}

// SpendDay is one UTC day of a renter's spending.
type SpendDay struct {
	Day      string  `json:"day"`
	Leases   int     `json:"leases"`
	SpentUSD float64 `json:"spent_usd"`
	GPUHours float64 `json:"gpu_hours"`
}
