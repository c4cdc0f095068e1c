package store

import (
	"cmp"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/idlegrid/idlegrid/attest"
)

// ErrNotFound is returned for a key that is not stored.
var ErrNotFound = errors.New("not found")

const (
	leasePrefix   = "leases/"
	jobPrefix     = "jobs/"
	summaryPrefix = "summaries/"
	// maxRecord bounds one stored job or lease; larger entries are treated
	// as damaged rather than read into memory.
	maxRecord = 4 << 20
)

// Lease is one side's durable copy of a lease: the renter's signed award
// and the provider's signed acceptance, plus where it stands.
type Lease struct {
	ID         string `json:"id"`   // record ID of the award
	Side       string `json:"side"` // "renter" or "provider"
	Award      []byte `json:"award"`
	Acceptance []byte `json:"acceptance,omitempty"`
	JobCID     string `json:"job"` // CID of the job spec the provider runs
	// JobID is the renter's job (record ID of one submission) on a
	// renter-side lease; empty on provider leases and on leases from before
	// job IDs differed from spec CIDs (use RenterJobID).
	JobID      string   `json:"job_id,omitempty"`
	Renter     string   `json:"renter"`
	Provider   string   `json:"provider"`
	GPUs       []string `json:"gpus"`
	PriceMicro uint64   `json:"price_micro"`
	Model      string   `json:"model,omitempty"`
	Tier       string   `json:"tier"`
	NoticeSec  uint32   `json:"notice_s,omitempty"`
	// CPUCores and RAMMiB are what a CPU-only lease (no GPUs) holds of
	// its provider's CPU share.
	CPUCores uint32 `json:"cpu_cores,omitempty"`
	RAMMiB   uint64 `json:"ram_mib,omitempty"`
	// ExpectedSec is the job's expected duration (from the RFQ).
	ExpectedSec uint64 `json:"expected_s,omitempty"`
	State       string `json:"state"`
	Reason      string `json:"reason,omitempty"`
	StartsAtMs  int64  `json:"starts_at_ms"`
	EndsAtMs    int64  `json:"ends_at_ms"`
	// PreemptAtMs is when a preempted lease's GPUs are taken back.
	PreemptAtMs int64 `json:"preempt_at_ms,omitempty"`
	UpdatedAtMs int64 `json:"updated_at_ms"`

	// Execution. Version grows with every change of the fields below or
	// State, so a renter can long-poll for changes.
	Version uint64 `json:"version,omitempty"`
	// Runtime is the job's runtime ("docker", "wasm").
	Runtime string `json:"runtime,omitempty"`
	// Spec is the job spec the provider fetched from the renter (its CID
	// is JobCID).
	Spec []byte `json:"spec,omitempty"`
	// Handle names the workload in its executor while it exists, so a
	// restarted provider can reattach to it.
	Handle string `json:"handle,omitempty"`
	// Health is a service's health check verdict (lease.Health*); empty
	// for batch work.
	Health         string `json:"health,omitempty"`
	ExitCode       *int   `json:"exit_code,omitempty"`
	WorkStartedMs  int64  `json:"work_started_ms,omitempty"`
	WorkFinishedMs int64  `json:"work_finished_ms,omitempty"`
	OutputCID      string `json:"output_cid,omitempty"`
	OutputSize     int64  `json:"output_size,omitempty"`
	// Artifact and Run are what the work ran: the module's CID or the
	// image's ID, and the settings that can change its result. The
	// provider signs them into its job events; the renter records what
	// the signed finished event named.
	Artifact string              `json:"artifact,omitempty"`
	Run      *attest.RunSettings `json:"run,omitempty"`
	LogBytes int64               `json:"log_bytes,omitempty"`

	// Attestation and payment. ChainSeq is the provider chain entry that
	// records the work's start (where the lease's attestations begin).
	ChainSeq  uint64 `json:"chain_seq,omitempty"`
	ChainLast uint64 `json:"chain_last,omitempty"`
	// PaidMicro and PaidUntilMs are what the latest voucher covers.
	PaidMicro   uint64 `json:"paid_micro,omitempty"`
	PaidUntilMs int64  `json:"paid_until_ms,omitempty"`
	// Receipt is the provider's sealed receipt once the lease ended.
	Receipt []byte `json:"receipt,omitempty"`

	// Replica numbers the replica of a replicated batch job this
	// renter-side lease runs (1-based; 0 on any other lease);
	// HostFingerprint is the hardware fingerprint its provider's capacity
	// record named at the award, and HostRegion the country its bid named:
	// a lost replica is auctioned again alone, under its number, on a host
	// independent of the others', after a restart too.
	Replica         int    `json:"replica,omitempty"`
	HostFingerprint string `json:"host_fingerprint,omitempty"`
	HostRegion      string `json:"host_region,omitempty"`
}

// JobEvent is one step of a job's history.
type JobEvent struct {
	AtMs    int64  `json:"at_ms"`
	Kind    string `json:"kind"`
	Message string `json:"message"`
	// Bids and BestPriceMicro describe the auction so far (bid events).
	Bids           int    `json:"bids,omitempty"`
	BestPriceMicro uint64 `json:"best_price_micro,omitempty"`
}

// Job is the renter's durable record of a job it posted.
type Job struct {
	// ID names one submission: each submit is a new job, even of the same
	// spec. Jobs stored before that have their spec's CID as ID (and no
	// SpecCID).
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
	// SpecCID is the CID of the job spec, which leases and RFQs carry.
	SpecCID string `json:"spec_cid,omitempty"`
	// IdempotencyKey is the client's key for safe retries: a submit with a
	// key an earlier job holds returns that job.
	IdempotencyKey string     `json:"idempotency_key,omitempty"`
	Spec           []byte     `json:"spec"` // the job spec, JSON
	State          string     `json:"state"`
	Reason         string     `json:"reason,omitempty"`
	RFQs           []string   `json:"rfqs,omitempty"`
	Leases         []string   `json:"leases,omitempty"`
	Events         []JobEvent `json:"events,omitempty"`
	CreatedAtMs    int64      `json:"created_at_ms"`
	UpdatedAtMs    int64      `json:"updated_at_ms"`
	// PromptTokens and CompletionTokens are the tokens a service's
	// endpoints served over the job's life (issue 30), saved while one
	// serves and when it stops, so spend reports them after the job ends.
	PromptTokens     uint64 `json:"prompt_tokens,omitempty"`
	CompletionTokens uint64 `json:"completion_tokens,omitempty"`
}

// RenterJobID is the renter's job of a renter-side lease: JobID, or the
// spec CID on a lease stored before the two differed.
func (l *Lease) RenterJobID() string {
	if l.JobID != "" {
		return l.JobID
	}
	return l.JobCID
}

// PutLease stores a lease durably: the write is synced before it returns,
// because nothing may run on a lease that a crash could forget.
func (d *DB) PutLease(l *Lease) error {
	if l.ID == "" {
		return errors.New("store.PutLease: empty ID")
	}
	return d.putJSON("store.PutLease", leasePrefix+l.ID, l, true)
}

// GetLease returns a stored lease or ErrNotFound.
func (d *DB) GetLease(id string) (*Lease, error) {
	var l Lease
	if err := d.getJSON("store.GetLease", leasePrefix+id, &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// Leases returns every stored lease, oldest first.
func (d *DB) Leases() ([]*Lease, error) {
	var out []*Lease
	err := scanJSON(d, "store.Leases", leasePrefix, func(l *Lease) { out = append(out, l) })
	slices.SortFunc(out, func(a, b *Lease) int {
		return cmp.Or(cmp.Compare(a.StartsAtMs, b.StartsAtMs), strings.Compare(a.ID, b.ID))
	})
	return out, err
}

// PutJob stores a job durably.
func (d *DB) PutJob(j *Job) error {
	if j.ID == "" {
		return errors.New("store.PutJob: empty ID")
	}
	return d.putJSON("store.PutJob", jobPrefix+j.ID, j, true)
}

// GetJob returns a stored job or ErrNotFound.
func (d *DB) GetJob(id string) (*Job, error) {
	var j Job
	if err := d.getJSON("store.GetJob", jobPrefix+id, &j); err != nil {
		return nil, err
	}
	return &j, nil
}

// Jobs returns every stored job, newest first.
func (d *DB) Jobs() ([]*Job, error) {
	var out []*Job
	err := scanJSON(d, "store.Jobs", jobPrefix, func(j *Job) { out = append(out, j) })
	slices.SortFunc(out, func(a, b *Job) int {
		return cmp.Or(cmp.Compare(b.CreatedAtMs, a.CreatedAtMs), strings.Compare(a.ID, b.ID))
	})
	return out, err
}

// PutSummary stores a signed award summary (raw envelope) until expires;
// badger drops it after that.
func (d *DB) PutSummary(id string, raw []byte, expires time.Time) error {
	ttl := time.Until(expires)
	if ttl <= 0 {
		return nil
	}
	return d.putTTL("store.PutSummary", summaryPrefix+id, raw, ttl)
}

// Summaries returns every stored award summary envelope.
func (d *DB) Summaries() ([][]byte, error) { return d.scanRaw("store.Summaries", summaryPrefix) }

// SummaryIDs returns the IDs of every stored award summary, reading keys
// only: the price index keeps the summaries it opened and reads only the
// ones it lacks (Summary).
func (d *DB) SummaryIDs() ([]string, error) { return d.idsUnder("store.SummaryIDs", summaryPrefix) }

// Summary returns one stored award summary, or ErrNotFound.
func (d *DB) Summary(id string) ([]byte, error) { return d.getRaw("store.Summary", summaryPrefix+id) }

// DeleteSummaries removes stored award summaries; IDs not stored are no
// error.
func (d *DB) DeleteSummaries(ids []string) error {
	return d.deleteUnder("store.DeleteSummaries", summaryPrefix, ids)
}
