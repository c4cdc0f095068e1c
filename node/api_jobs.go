package node

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/jobproto"
	"github.com/idlegrid/idlegrid/node/renter"

	"github.com/idlegrid/idlegrid/node/api"
	"github.com/idlegrid/idlegrid/store"
)

func (b apiBackend) SubmitJob(_ context.Context, spec []byte, opts api.SubmitOptions) (api.Job, error) {
	if b.n.renter == nil {
		return api.Job{}, api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "this node is a %s; post jobs from a renter node", b.n.cfg.Role)
	}
	j, err := b.n.renter.SubmitWith(spec, renter.SubmitOptions{IdempotencyKey: opts.IdempotencyKey})
	if err != nil {
		// The whole chain goes to the log; the user reads what to fix.
		b.n.log.Info("job submit refused", "err", err)
	}
	switch {
	case errors.Is(err, renter.ErrIdempotencyConflict):
		return api.Job{}, api.Errorf(http.StatusConflict, "conflict", "%s", userMessage(err, renter.ErrIdempotencyConflict))
	case err != nil:
		return api.Job{}, api.Errorf(http.StatusBadRequest, api.CodeBadSpec, "%s",
			userMessage(err, auction.ErrInvalidJobSpec, renter.ErrMissingArtifact, renter.ErrUnknownModel))
	}
	return b.toAPIJob(j), nil
}

func (b apiBackend) Jobs() ([]api.Job, error) {
	jobs, err := b.n.db.Jobs()
	if err != nil {
		return nil, err
	}
	out := make([]api.Job, 0, len(jobs))
	for _, j := range jobs {
		out = append(out, b.toAPIJob(j))
	}
	return out, nil
}

func (b apiBackend) Job(id string) (api.Job, error) {
	id, err := b.jobID(id)
	if err != nil {
		return api.Job{}, err
	}
	j, err := b.n.db.GetJob(id)
	if errors.Is(err, store.ErrNotFound) {
		return api.Job{}, api.Errorf(http.StatusNotFound, api.CodeNotFound, "no job %s", id)
	}
	if err != nil {
		return api.Job{}, err
	}
	return b.toAPIJob(j), nil
}

func (b apiBackend) WatchJob(ctx context.Context, id string) (<-chan api.JobEvent, error) {
	if b.n.renter == nil {
		return nil, b.renterOnly()
	}
	id, err := b.jobID(id)
	if err != nil {
		return nil, err
	}
	events, err := b.n.renter.Watch(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, api.Errorf(http.StatusNotFound, api.CodeNotFound, "no job %s", id)
	}
	if err != nil {
		return nil, err
	}
	out := make(chan api.JobEvent)
	go func() {
		defer close(out)
		for ev := range events {
			select {
			case out <- api.EventFromStore(ev):
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

func (b apiBackend) Leases() ([]api.Lease, error) {
	leases, err := b.n.db.Leases()
	if err != nil {
		return nil, err
	}
	out := make([]api.Lease, 0, len(leases))
	for _, l := range leases {
		out = append(out, api.LeaseFromStore(l))
	}
	return out, nil
}

func (b apiBackend) Prices(window time.Duration) (api.Prices, error) {
	until := time.Now()
	since := until.Add(-window)
	stats, err := b.n.trust.PriceIndex(since, until)
	if err != nil {
		return api.Prices{}, err
	}
	out := api.Prices{Window: window.String(), Since: since.UTC(), Stats: []api.PriceStat{}}
	for _, st := range stats {
		out.Stats = append(out.Stats, api.PriceStat{
			Model: st.Model, Tier: string(st.Tier), Awards: st.Awards, GPUs: int(st.GPUs),
			MedianUSD: float64(st.MedianMicro) / 1e6, P10USD: float64(st.P10Micro) / 1e6, P90USD: float64(st.P90Micro) / 1e6,
		})
	}
	return out, nil
}

func (b apiBackend) toAPIJob(j *store.Job) api.Job {
	out := api.Job{
		ID: j.ID, Name: j.Name, SpecCID: j.SpecCID, State: j.State, Reason: j.Reason, RFQs: j.RFQs,
		CreatedAt: time.UnixMilli(j.CreatedAtMs).UTC(), UpdatedAt: time.UnixMilli(j.UpdatedAtMs).UTC(),
	}
	for _, id := range j.Leases {
		if l, err := b.n.db.GetLease(id); err == nil {
			out.Leases = append(out.Leases, api.LeaseFromStore(l))
		}
	}
	for _, ev := range j.Events {
		out.Events = append(out.Events, api.EventFromStore(ev))
	}
	if b.n.renter != nil {
		out.Forwards = apiForwards(b.n.renter.Forwards(j.ID))
		if e, ok := b.n.renter.ServiceEndpoint(j.ID); ok {
			ae := apiEndpoint(e)
			out.Endpoint = &ae
		}
	}
	return out
}

// renterOnly is the API error for a renter operation on another role.
func (b apiBackend) renterOnly() error {
	return api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "this node is a %s; jobs live on the renter node", b.n.cfg.Role)
}

// jobError maps the renter's errors to API errors.
func jobError(err error) error {
	var re *jobproto.RemoteError
	switch {
	case errors.Is(err, store.ErrNotFound), errors.Is(err, renter.ErrNoLease):
		return api.Errorf(http.StatusNotFound, api.CodeNotFound, "%v", err)
	case errors.Is(err, renter.ErrJobEnded):
		return api.Errorf(http.StatusConflict, "conflict", "%v", err)
	case errors.As(err, &re) && re.Code == jobproto.CodeNotReady:
		return api.Errorf(http.StatusConflict, "not_ready", "%v", err)
	case errors.As(err, &re) && (re.Code == jobproto.CodeGone || re.Code == jobproto.CodeNotFound):
		return api.Errorf(http.StatusGone, "gone", "%v", err)
	case err != nil:
		return api.Errorf(http.StatusBadGateway, "provider", "%v", err)
	}
	return nil
}

func (b apiBackend) JobLogs(ctx context.Context, id, lease string, follow bool, w io.Writer) error {
	if b.n.renter == nil {
		return b.renterOnly()
	}
	id, lease, err := b.jobAndLease(id, lease)
	if err != nil {
		return err
	}
	return jobError(b.n.renter.Logs(ctx, id, lease, follow, w))
}

func (b apiBackend) JobResult(ctx context.Context, id, lease string) (api.Result, error) {
	if b.n.renter == nil {
		return api.Result{}, b.renterOnly()
	}
	id, lease, err := b.jobAndLease(id, lease)
	if err != nil {
		return api.Result{}, err
	}
	l, path, err := b.n.renter.Result(ctx, id, lease)
	if err != nil {
		return api.Result{}, jobError(err)
	}
	return api.Result{Lease: l.ID, CID: l.OutputCID, Size: l.OutputSize, Path: path}, nil
}

func (b apiBackend) CancelJob(ctx context.Context, id string) (api.Job, error) {
	if b.n.renter == nil {
		return api.Job{}, b.renterOnly()
	}
	id, err := b.jobID(id)
	if err != nil {
		return api.Job{}, err
	}
	j, err := b.n.renter.Cancel(ctx, id)
	if err != nil {
		return api.Job{}, jobError(err)
	}
	return b.toAPIJob(j), nil
}

func (b apiBackend) AddArtifact(r io.Reader) (string, error) {
	if b.n.renter == nil {
		return "", b.renterOnly()
	}
	return b.n.renter.AddArtifact(r)
}

func (b apiBackend) Reputations() ([]api.Reputation, error) {
	all := b.n.trust.Reputation().All()
	out := make([]api.Reputation, 0, len(all))
	for _, r := range all {
		out = append(out, api.ReputationFrom(r))
	}
	slices.SortFunc(out, func(x, y api.Reputation) int { return cmp.Compare(y.Score, x.Score) })
	return out, nil
}

func (b apiBackend) Reputation(p string) (api.Reputation, error) {
	if _, err := peer.Decode(p); err != nil {
		return api.Reputation{}, api.Errorf(http.StatusBadRequest, api.CodeBadRequest, "%q is not a peer ID (peer IDs look like 12D3KooW…; idlegrid rep lists them)", p)
	}
	return api.ReputationFrom(b.n.trust.Reputation().Of(p)), nil
}

func (b apiBackend) Attestations(ctx context.Context, lease string) ([]byte, error) {
	lease, err := b.leaseID(lease)
	if err != nil {
		return nil, err
	}
	x, err := b.n.trust.ExportAttestations(ctx, lease)
	if errors.Is(err, store.ErrNotFound) {
		return nil, api.Errorf(http.StatusNotFound, api.CodeNotFound, "no lease %s", lease)
	}
	if err != nil {
		return nil, api.Errorf(http.StatusBadGateway, "attestations", "%v", err)
	}
	return json.MarshalIndent(x, "", "  ")
}
