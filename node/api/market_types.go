package api

import "time"

// Offer is a provider's verified capacity record as the API shows it.
// Prices are in USD per GPU-hour (the record carries integer micro-USD).
type Offer struct {
	PeerID       string     `json:"peer_id"`
	Seq          uint64     `json:"seq"`
	IssuedAt     time.Time  `json:"issued_at"`
	ExpiresAt    time.Time  `json:"expires_at"`
	Country      string     `json:"country"`
	Zone         string     `json:"zone,omitempty"`
	Reachability string     `json:"reachability"`
	Runtimes     []string   `json:"runtimes"`
	Tiers        []string   `json:"tiers"`
	FloorUSD     TierPrices `json:"floor_usd"`
	GPUs         []OfferGPU `json:"gpus"`
	FreeGPUs     int        `json:"free_gpus"`
	Host         OfferHost  `json:"host"`
	// CPU is the share offered to CPU-only (gpus: 0) work; nil: none.
	CPU         *OfferCPU    `json:"cpu,omitempty"`
	Calendar    []OfferSlot  `json:"calendar,omitempty"`
	MaxDuration string       `json:"max_duration,omitempty"`
	Images      []string     `json:"allowed_images,omitempty"`
	Egress      bool         `json:"egress"`
	Datasets    []string     `json:"datasets,omitempty"`
	Models      []string     `json:"models,omitempty"` // model IDs on the host's disk
	Version     string       `json:"version"`
	Reliability float64      `json:"reliability"`
	Fingerprint string       `json:"fingerprint_id,omitempty"`
	Extra       *OfferDetail `json:"detail,omitempty"`
}

// OfferCPU is a provider's CPU share: cores and RAM offered to CPU-only
// work, how much is free, and its floor per core-hour.
type OfferCPU struct {
	Cores               uint32  `json:"cores"`
	RAMMiB              uint64  `json:"ram_mib"`
	FreeCores           uint32  `json:"free_cores"`
	FreeRAMMiB          uint64  `json:"free_ram_mib"`
	FloorUSDPerCoreHour float64 `json:"floor_usd_per_core_hour"`
}

// TierPrices holds a USD price per tier; a tier not offered is 0.
type TierPrices struct {
	Gold   float64 `json:"gold"`
	Silver float64 `json:"silver"`
	Bronze float64 `json:"bronze"`
}

// OfferGPU is one GPU of an offer.
type OfferGPU struct {
	Index      uint32 `json:"index"`
	UUID       string `json:"uuid"`
	Model      string `json:"model"`
	Name       string `json:"name"`
	VRAMMiB    uint64 `json:"vram_mib"`
	ComputeCap string `json:"compute_cap"`
	Free       bool   `json:"free"`
	LeaseID    string `json:"lease_id,omitempty"`
}

// OfferHost is the machine around the GPUs.
type OfferHost struct {
	CPUCores      uint32 `json:"cpu_cores"`
	RAMMiB        uint64 `json:"ram_mib"`
	DiskGiB       uint64 `json:"disk_gib"`
	BandwidthMbps uint32 `json:"bandwidth_mbps"`
}

// OfferSlot is one weekly availability window (UTC).
type OfferSlot struct {
	Day    string  `json:"day"`
	Start  string  `json:"start"`
	End    string  `json:"end"`
	Factor float64 `json:"factor"`
}

// OfferDetail is extra information for `market show`.
type OfferDetail struct {
	// RecordKey is the DHT key of the record.
	RecordKey string `json:"record_key"`
	// Capabilities are the DHT keys the provider announces: the
	// provider key, then the CIDs of its datasets.
	Capabilities []string `json:"capabilities"`
}

// ClauseStat says how many offers one query clause removed.
type ClauseStat struct {
	Clause    string `json:"clause"`
	Removed   int    `json:"removed"`
	Remaining int    `json:"remaining"`
}

// SearchResult is GET /v1/market/search.
type SearchResult struct {
	Query     string       `json:"query"`
	Sort      string       `json:"sort,omitempty"`
	Providers int          `json:"providers_found"`
	Offers    []Offer      `json:"offers"`
	Explain   []ClauseStat `json:"explain,omitempty"`
	// Problems are providers whose record could not be fetched or
	// verified; they are reported, never silently skipped.
	Problems []string `json:"problems,omitempty"`
}

// CodeBadQuery marks a market query that does not parse.
const CodeBadQuery = "bad_query"
