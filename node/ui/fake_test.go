package ui_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/idlegrid/idlegrid/node/api"
)

// fakeBackend serves fixed data with a row in every table, and records
// what the dashboard asked it to do.
type fakeBackend struct {
	dir  string
	role string
	// empty: no earnings, spend, prices or telemetry, as on a new node.
	empty bool

	gpuHistory []api.GPUSeries

	mu        sync.Mutex
	submitted []string
	cancelled []string
	// serviceRequests grows the fake service's requests on each read, so
	// a test can see the job page reload its endpoint table.
	serviceRequests uint64
}

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

const (
	fakePeer  = "12D3KooWFakeProviderPeerIDxxxxxxxxxxxxxxxxxxxx"
	fakeJob   = "bafyfakejob"
	fakeLease = "lease-1"
	// fakeService is a replicated service job with an endpoint: two live
	// replicas and one replaced.
	fakeService = "bafyfakeservice"
)

func (f *fakeBackend) Identity() api.Identity {
	return api.Identity{PeerID: "12D3KooWSelf", Role: f.role, Version: "v0.test", Addrs: []string{"/ip4/127.0.0.1/tcp/4001"}}
}

func (f *fakeBackend) Status() api.Status {
	return api.Status{
		Role: f.role, PeerID: "12D3KooWSelf", Version: "v0.test", Ready: true, StartedAt: t0, UptimeSeconds: 3725,
		ListenAddrs: []string{"/ip4/127.0.0.1/tcp/4001"}, RoutingTable: 3, ConnectedPeers: 1,
		TopicPeers: map[string]int{"idlegrid/rfq/1": 2, "idlegrid/receipts/1": 1},
	}
}

func (f *fakeBackend) Peers() []api.Peer {
	return []api.Peer{{ID: fakePeer, Direction: "outbound", LatencyMs: 1.5, Connected: true, GossipScore: -12.5, AbusePoints: 40, LastAbuse: "gossip_reject"}}
}

func (f *fakeBackend) PublishDebug(context.Context, string, []byte) error {
	return errors.New("not here")
}

func (f *fakeBackend) RecentGossip(string) ([]api.GossipMessage, error) { return nil, nil }

func (f *fakeBackend) Search(_ context.Context, q, _ string, _ int, _ bool) (api.SearchResult, error) {
	if q == "bad" {
		return api.SearchResult{}, api.Errorf(http.StatusBadRequest, api.CodeBadQuery, `unknown field "bad" (did you mean "gpu"?)`)
	}
	if q == "nogpu" {
		// An offer whose GPUs are all gone still renders.
		o := fakeOffer()
		o.GPUs = nil
		return api.SearchResult{Query: q, Providers: 1, Offers: []api.Offer{o}}, nil
	}
	return api.SearchResult{Query: q, Providers: 1, Offers: []api.Offer{fakeOffer()}}, nil
}

func fakeOffer() api.Offer {
	return api.Offer{
		PeerID: fakePeer, Seq: 4, Country: "de", Zone: "fra-1", Reachability: "public", Runtimes: []string{"wasm"},
		FloorUSD: api.TierPrices{Gold: 3.2, Silver: 2.49, Bronze: 1.89}, FreeGPUs: 1, Reliability: 0.98,
		GPUs: []api.OfferGPU{{Index: 0, Model: "h100-sxm-80gb", Name: "NVIDIA H100 80GB HBM3", VRAMMiB: 81920, ComputeCap: "9.0", Free: true},
			{Index: 1, Model: "h100-sxm-80gb", Name: "NVIDIA H100 80GB HBM3", VRAMMiB: 81920, ComputeCap: "9.0", LeaseID: fakeLease}},
		Host: api.OfferHost{CPUCores: 32, RAMMiB: 262144, DiskGiB: 2000, BandwidthMbps: 1000},
	}
}

func (f *fakeBackend) Provider(context.Context, string) (api.Offer, error) { return fakeOffer(), nil }
func (f *fakeBackend) Capacity() (api.Offer, error)                        { return fakeOffer(), nil }

func (f *fakeBackend) SubmitJob(_ context.Context, spec []byte, _ api.SubmitOptions) (api.Job, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.submitted = append(f.submitted, string(spec))
	if len(spec) == 0 || string(spec) == "nonsense\n" {
		return api.Job{}, api.Errorf(http.StatusBadRequest, api.CodeBadSpec, "invalid job spec: max_price: required")
	}
	return api.Job{ID: fakeJob, State: "auctioning"}, nil
}

func (f *fakeBackend) Jobs() ([]api.Job, error) {
	j, _ := f.Job(fakeJob)
	return []api.Job{j}, nil
}

func (f *fakeBackend) Job(id string) (api.Job, error) {
	if id == fakeService {
		return f.serviceJob(), nil
	}
	if id != fakeJob {
		return api.Job{}, api.Errorf(http.StatusNotFound, api.CodeNotFound, "no job %s", id)
	}
	return api.Job{ID: id, Name: "fake-demo", State: "running", CreatedAt: t0, Events: fakeEvents(), Leases: f.leases()}, nil
}

func (f *fakeBackend) serviceJob() api.Job {
	f.mu.Lock()
	f.serviceRequests++
	n := f.serviceRequests
	f.mu.Unlock()
	stats := func(requests, prompt, completion uint64, usd float64) api.EndpointStats {
		s := api.EndpointStats{SpentUSD: usd}
		s.Requests, s.RatePerSec, s.P95Ms, s.TTFTP95Ms = requests, 2.5, 241.3, 12.7
		s.PromptTokens, s.CompletionTokens = prompt, completion
		if t := prompt + completion; t > 0 {
			s.USDPerMTok = usd / float64(t) * 1e6
		}
		return s
	}
	e := &api.Endpoint{Job: fakeService, Port: 8080, Listen: "127.0.0.1:8000", Replicas: []api.EndpointReplica{
		{Lease: "lease-s0", Slot: 0, Provider: fakePeer, Live: true, EndpointStats: stats(n, 2*n, 8*n, 0.0005)},
		{Lease: "lease-s1", Slot: 1, Provider: "12D3KooWOtherProviderxxxxxxxxxxxxxxxxxxxxxxxx", Live: true, EndpointStats: stats(7, 14, 56, 0.0007)},
		{Lease: "lease-s2", Slot: 2, Provider: "12D3KooWGoneProviderxxxxxxxxxxxxxxxxxxxxxxxxx", Live: false, EndpointStats: stats(3, 0, 0, 0.0001)},
	}}
	e.Total = stats(n+10, 2*n+14, 8*n+56, 0.0013)
	return api.Job{ID: fakeService, Name: "fake-model", State: "running", CreatedAt: t0, Events: fakeEvents(), Endpoint: e}
}

func fakeEvents() []api.JobEvent {
	return []api.JobEvent{
		{At: t0, Kind: "rfq", Message: "RFQ published"},
		{At: t0.Add(time.Second), Kind: "bid", Message: "bid from provider", Bids: 1, BestPriceUSD: 2.49},
		{At: t0.Add(2 * time.Second), Kind: "award", Message: "awarded to provider"},
	}
}

func (f *fakeBackend) WatchJob(_ context.Context, id string) (<-chan api.JobEvent, error) {
	if _, err := f.Job(id); err != nil {
		return nil, err
	}
	ch := make(chan api.JobEvent, 4)
	for _, ev := range fakeEvents() {
		ch <- ev
	}
	close(ch)
	return ch, nil
}

func (f *fakeBackend) leases() []api.Lease {
	return []api.Lease{{ID: fakeLease, Side: "provider", JobID: fakeJob, Renter: "12D3KooWSelf", Provider: fakePeer, Tier: "silver", PriceUSD: 2.49, State: "running", EndsAt: t0.Add(time.Hour)}}
}

func (f *fakeBackend) Leases() ([]api.Lease, error) { return f.leases(), nil }

func (f *fakeBackend) Prices(window time.Duration) (api.Prices, error) {
	if f.empty {
		return api.Prices{Window: window.String()}, nil
	}
	return api.Prices{Window: window.String(), Since: t0.Add(-window), Stats: []api.PriceStat{
		{Model: "h100-sxm-80gb", Tier: "silver", Awards: 3, GPUs: 3, MedianUSD: 2.5, P10USD: 2.3, P90USD: 2.9},
		{Model: "rtx-4090", Tier: "bronze", Awards: 2, GPUs: 2, MedianUSD: 0.5, P10USD: 0.44, P90USD: 0.6},
	}}, nil
}

func (f *fakeBackend) JobLogs(_ context.Context, id, _ string, _ bool, w io.Writer) error {
	if id != fakeJob {
		return api.Errorf(http.StatusNotFound, api.CodeNotFound, "no job %s", id)
	}
	_, err := io.WriteString(w, "start: n=160\ndone\n")
	return err
}

func (f *fakeBackend) JobResult(context.Context, string, string) (api.Result, error) {
	p := filepath.Join(f.dir, "result.tar")
	if err := os.WriteFile(p, []byte("tar bytes"), 0o644); err != nil {
		return api.Result{}, err
	}
	return api.Result{Lease: fakeLease, CID: "bafyresult", Size: 9, Path: p}, nil
}

func (f *fakeBackend) CancelJob(_ context.Context, id string) (api.Job, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cancelled = append(f.cancelled, id)
	return api.Job{ID: id, State: "cancelled"}, nil
}

func (f *fakeBackend) AddArtifact(io.Reader) (string, error) { return "", errors.New("not here") }

func (f *fakeBackend) Reputations() ([]api.Reputation, error) {
	return []api.Reputation{{Provider: fakePeer, Score: 0.87, Badge: "trusted", OwnSuccesses: 4, GossipSuccesses: 9, UptimeWindows: 10, UptimeRatio: 0.9, GPUHours: 12}}, nil
}

func (f *fakeBackend) Reputation(string) (api.Reputation, error) {
	r, _ := f.Reputations()
	return r[0], nil
}

func (f *fakeBackend) Earnings(since time.Time) (api.Earnings, error) {
	if f.empty {
		return api.Earnings{Since: since, Days: []api.EarningsDay{{Day: "2026-11-30"}}}, nil
	}
	return api.Earnings{Since: since, TotalUSD: 7.5, FillRate: 0.4, Days: []api.EarningsDay{
		{Day: "2026-11-29", Leases: 1, EarnedUSD: 2.5, LeasedGPUHours: 1, OfferedGPUHours: 4, FillRate: 0.25},
		{Day: "2026-11-30", Leases: 2, EarnedUSD: 5, LeasedGPUHours: 2, OfferedGPUHours: 4, FillRate: 0.5},
	}}, nil
}

func (f *fakeBackend) Spend(since time.Time) (api.Spend, error) {
	if f.empty {
		return api.Spend{Since: since, Days: []api.SpendDay{{Day: "2026-11-30"}}}, nil
	}
	return api.Spend{Since: since, TotalUSD: 3.25, Days: []api.SpendDay{{Day: "2026-11-30", Leases: 2, SpentUSD: 3.25, GPUHours: 1.3}}}, nil
}

func (f *fakeBackend) Attestations(_ context.Context, lease string) ([]byte, error) {
	if lease != fakeLease {
		return nil, api.Errorf(http.StatusNotFound, api.CodeNotFound, "no lease %s", lease)
	}
	return []byte(`{"lease":"lease-1","entries":[]}`), nil
}

func (f *fakeBackend) Reload() (api.Reload, error) { return api.Reload{}, nil }

func (f *fakeBackend) GPUHistory() ([]api.GPUSeries, error) { return f.gpuHistory, nil }
