package renter

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/ipfs/go-cid"
	mh "github.com/multiformats/go-multihash"

	"github.com/idlegrid/idlegrid/auction"
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

// Submit validates a YAML job spec, records a new job and starts its
// auction. Nothing is published for a spec that fails validation.
func (a *Renter) Submit(specYAML []byte) (*store.Job, error) {
	return a.SubmitWith(specYAML, SubmitOptions{})
}

// SubmitWith is Submit with options. Each submission is its own job with
// its own ID, even of a spec submitted before: the spec's CID (which RFQs
// and leases carry, and by which providers fetch the spec) is kept on the
// job as SpecCID.
func (a *Renter) SubmitWith(specYAML []byte, opts SubmitOptions) (*store.Job, error) {
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
	if err := a.precheck(context.Background(), spec); err != nil {
		return nil, err
	}
	specCID, err := spec.CID()
	if err != nil {
		return nil, err
	}
	// One submit at a time, so two retries with one key cannot both miss
	// the other's job.
	a.submitMu.Lock()
	defer a.submitMu.Unlock()
	if opts.IdempotencyKey != "" {
		prev, err := a.jobByKey(opts.IdempotencyKey)
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
	now := a.now()
	id, err := newJobID(specCID, now.UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("renter.Submit: %w", err)
	}
	job := &store.Job{
		ID: id, Name: spec.Name, SpecCID: specCID.String(), IdempotencyKey: opts.IdempotencyKey,
		Spec: specYAML, State: lease.JobAuctioning, CreatedAtMs: now.UnixMilli(), UpdatedAtMs: now.UnixMilli(),
	}
	if err := a.jobs.create(job); err != nil {
		return nil, err
	}
	if err := a.background(func(ctx context.Context) {
		a.runJob(ctx, id, func(ctx context.Context) { a.auction(ctx, id, spec, 0) })
	}); err != nil {
		return nil, err
	}
	return a.db.GetJob(id)
}

// jobByKey returns the job that holds an idempotency key, or nil. Keys
// are rare and jobs few per node, so a scan does.
func (a *Renter) jobByKey(key string) (*store.Job, error) {
	jobs, err := a.db.Jobs()
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
