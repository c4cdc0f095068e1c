package renter

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	mh "github.com/multiformats/go-multihash"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/auction/query"
	"github.com/idlegrid/idlegrid/node/executor"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// ErrIdempotencyConflict is returned when an idempotency key an earlier
// job holds comes with a different spec: a retry must repeat its request.
var ErrIdempotencyConflict = errors.New("idempotency key was used for another spec")

// MaxIdempotencyKey bounds a client's idempotency key, in bytes.
const MaxIdempotencyKey = 128

// SubmitOptions are the optional parts of a submission.
type SubmitOptions struct {
	// IdempotencyKey makes a retried submit safe: a submit with a key an
	// earlier job holds returns that job instead of starting another.
	// Empty: every submit is a new job.
	IdempotencyKey string
}

// submitterDeps are what the submitter needs of the room.
type submitterDeps struct {
	now       func() time.Time
	self      peer.ID
	db        *store.DB
	jobs      *jobTracker
	artifacts *executor.DirArtifacts
	// offers is the market view (Deps.Offers), for precheck's advice.
	offers func(ctx context.Context) ([]query.Offer, error)
	// start runs a new job's auction in the background (jobDriver.start).
	start func(jobID string, spec *auction.JobSpec) error
	// avoid keeps a provider out of a job's auctions (avoidList.add).
	avoid func(jobID, provider string)
}

// submitter validates job specs, refuses those that could never be
// filled, records each new job and has it started; idempotency keys make
// a retried submit return the job it made.
type submitter struct {
	submitterDeps
	mu sync.Mutex // one submit at a time (idempotency keys)
}

// submit is Renter.SubmitWith. Each submission is its own job with
// its own ID, even of a spec submitted before: the spec's CID (which RFQs
// and leases carry, and by which providers fetch the spec) is kept on the
// job as SpecCID.
func (s *submitter) submit(specYAML []byte, opts SubmitOptions) (*store.Job, error) {
	if len(opts.IdempotencyKey) > MaxIdempotencyKey {
		// Shown to the user as it is: the key is theirs to shorten.
		return nil, fmt.Errorf("idempotency key of %d bytes, at most %d", len(opts.IdempotencyKey), MaxIdempotencyKey)
	}
	spec, err := auction.ParseJobSpec(specYAML)
	if err != nil {
		return nil, err
	}
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if err := s.precheck(context.Background(), spec); err != nil {
		return nil, err
	}
	specCID, err := spec.CID()
	if err != nil {
		return nil, err
	}
	// One submit at a time, so two retries with one key cannot both miss
	// the other's job.
	s.mu.Lock()
	defer s.mu.Unlock()
	if opts.IdempotencyKey != "" {
		prev, err := s.jobByKey(opts.IdempotencyKey)
		if err != nil {
			return nil, fmt.Errorf("renter.Submit: %w", err)
		}
		if prev != nil {
			if prev.SpecCID != specCID.String() {
				return nil, fmt.Errorf("renter.Submit: key %q: %w (job %s)", opts.IdempotencyKey, ErrIdempotencyConflict, prev.ID)
			}
			return prev, nil
		}
	}
	now := s.now()
	id, err := newJobID(specCID, now.UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("renter.Submit: %w", err)
	}
	job := &store.Job{
		ID: id, Name: spec.Name, SpecCID: specCID.String(), IdempotencyKey: opts.IdempotencyKey,
		Spec: specYAML, State: lease.JobAuctioning, CreatedAtMs: now.UnixMilli(), UpdatedAtMs: now.UnixMilli(),
	}
	if err := s.jobs.create(job); err != nil {
		return nil, err
	}
	if err := s.start(id, spec); err != nil {
		return nil, err
	}
	return s.db.GetJob(id)
}

// jobByKey returns the job that holds an idempotency key, or nil. Keys
// are rare and jobs few per node, so a scan does.
func (s *submitter) jobByKey(key string) (*store.Job, error) {
	jobs, err := s.db.Jobs()
	if err != nil {
		return nil, err
	}
	for _, j := range jobs {
		if j.IdempotencyKey == key {
			return j, nil
		}
	}
	return nil, nil
}

// newJobID names one submission of the spec specCID: a CID over the spec's
// CID, the time and a random nonce, so no two submissions share an ID and
// the ID still shows what it was derived from.
func newJobID(specCID cid.Cid, nowMs int64) (string, error) {
	var nonce [16]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return "", fmt.Errorf("job ID nonce: %w", err)
	}
	b := append([]byte("idlegrid-job\x00"), specCID.Bytes()...)
	b = binary.BigEndian.AppendUint64(b, uint64(nowMs))
	b = append(b, nonce[:]...)
	sum, err := mh.Sum(b, mh.SHA2_256, -1)
	if err != nil {
		return "", fmt.Errorf("job ID: %w", err)
	}
	return cid.NewCidV1(cid.Raw, sum).String(), nil
}
