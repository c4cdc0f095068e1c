package renter

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/idlegrid/idlegrid/node/endpoint"
	"github.com/idlegrid/idlegrid/node/forward"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// ErrEndpointExists: the job already has an endpoint.
var ErrEndpointExists = fmt.Errorf("service endpoint already running")

// Endpoint is a service's one local address over its replicas, with the
// stats of each replica and of the service (package endpoint).
type Endpoint struct {
	Job      string
	Port     uint16
	Listen   string
	Total    EndpointStats
	Replicas []EndpointReplica
}

// EndpointStats are an endpoint's counts with what the tokens cost:
// SpentUSD is what the leases' vouchers paid, USDPerMTok that over the
// tokens served, per million (0 before any token).
type EndpointStats struct {
	endpoint.Stats
	SpentUSD   float64
	USDPerMTok float64
}

// EndpointReplica is one replica's stats.
type EndpointReplica struct {
	Lease    string
	Slot     int
	Provider string
	Live     bool
	EndpointStats
}

// endpointDeps are what the endpoints need of the room.
type endpointDeps struct {
	log *slog.Logger
	now func() time.Time
	db  *store.DB
	// registerer gets the endpoints' metrics; nil: none.
	registerer prometheus.Registerer
	// openTunnel opens a tunnel to a provider (p2p.Node.OpenTunnel).
	openTunnel forward.Opener
	// watch streams a job's events until it ends (jobTracker.watch).
	watch func(ctx context.Context, jobID string) (<-chan store.JobEvent, error)
	// background starts work on the room's context (background.Go).
	background func(fn func(ctx context.Context)) error
	// slots are the replicated services' leases by slot.
	slots *replicaSlots
	// saveTokens stores a job's token counts (jobTracker.update).
	saveTokens func(jobID string, prompt, completion uint64) error
}

// endpoints are the renter's service endpoints, one per job at most.
type endpoints struct {
	endpointDeps
	mu    sync.Mutex
	byJob map[string]*runningEndpoint
}

type runningEndpoint struct {
	ep   *endpoint.Endpoint
	port uint16
	// base is the tokens the job's earlier endpoints served (the job's
	// saved counts when this one started).
	base tokenCount

	saveMu sync.Mutex
	saved  tokenCount // what the job holds now
}

// refreshEvery is how often an endpoint reads which replicas serve now.
const refreshEvery = 250 * time.Millisecond

// start serves a service job's port on listen (default 127.0.0.1:PORT),
// balanced over the job's running, healthy replicas as they come and go.
// It stops when the job ends or stop is called.
func (es *endpoints) start(jobID, listen string, port uint16) (Endpoint, error) {
	j, listen, err := serviceListen(es.db, jobID, listen, port)
	if err != nil {
		return Endpoint{}, fmt.Errorf("endpoint: %w", err)
	}
	ep, err := endpoint.New(endpoint.Config{Listen: listen}, endpoint.Deps{Logger: es.log, Clock: es.now, Registerer: es.registerer})
	if err != nil {
		return Endpoint{}, err
	}
	base := tokenCount{prompt: j.PromptTokens, completion: j.CompletionTokens}
	re := &runningEndpoint{ep: ep, port: port, base: base, saved: base}
	es.mu.Lock()
	if es.byJob == nil {
		es.byJob = map[string]*runningEndpoint{}
	}
	if es.byJob[jobID] != nil {
		es.mu.Unlock()
		_ = ep.Close()
		return Endpoint{}, fmt.Errorf("endpoint: %w: job %s", ErrEndpointExists, jobID)
	}
	es.byJob[jobID] = re
	es.mu.Unlock()
	ep.SetReplicas(es.replicas(jobID, port))
	err = es.background(func(ctx context.Context) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		if events, err := es.watch(ctx, jobID); err == nil {
			go func() {
				for range events {
				}
				cancel() // the endpoint ends with the job
			}()
		}
		go es.follow(ctx, jobID, re)
		if err := ep.Run(ctx); err != nil {
			es.log.Warn("endpoint stopped", "job", jobID, "err", err)
		}
		es.saveTokens(jobID, re)
		es.drop(jobID, re)
	})
	if err != nil {
		es.drop(jobID, re)
		_ = ep.Close()
		return Endpoint{}, err
	}
	return es.view(jobID, re), nil
}

// follow keeps the endpoint's replicas those serving the job now.
func (es *endpoints) follow(ctx context.Context, jobID string, re *runningEndpoint) {
	t := time.NewTicker(refreshEvery)
	defer t.Stop()
	save := time.NewTicker(saveTokensEvery)
	defer save.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			re.ep.SetReplicas(es.replicas(jobID, re.port))
		case <-save.C:
			es.saveTokens(jobID, re)
		}
	}
}

// replicas are the job's running leases whose service is not known
// unhealthy, each dialled over its own tunnel.
func (es *endpoints) replicas(jobID string, port uint16) []endpoint.Replica {
	j, err := es.db.GetJob(jobID)
	if err != nil {
		return nil
	}
	var out []endpoint.Replica
	for i, id := range j.Leases {
		l, err := es.db.GetLease(id)
		if err != nil || l.Side != lease.SideRenter || l.State != lease.Running || l.Health == lease.HealthUnhealthy {
			continue
		}
		p, err := peer.Decode(l.Provider)
		if err != nil {
			continue
		}
		slot, ok := es.slots.slotOf(jobID, l.ID)
		if !ok {
			slot = i
		}
		leaseID := l.ID
		out = append(out, endpoint.Replica{ID: leaseID, Slot: slot, Provider: l.Provider,
			Dial: func(ctx context.Context) (net.Conn, error) {
				st, err := forward.Dial(ctx, es.openTunnel, p, leaseID, port)
				if err != nil {
					return nil, err
				}
				return endpoint.StreamConn(st), nil
			}})
	}
	return out
}

// stop ends a job's endpoint.
func (es *endpoints) stop(jobID string) error {
	es.mu.Lock()
	re := es.byJob[jobID]
	es.mu.Unlock()
	if re == nil {
		return fmt.Errorf("endpoint: %w: job %s has no endpoint", store.ErrNotFound, jobID)
	}
	// Saved before it is dropped, so the job's count never goes back
	// (tokens reads the live count until then); answers still in flight
	// are saved when it has stopped.
	es.saveTokens(jobID, re)
	es.drop(jobID, re)
	return re.ep.Close()
}

func (es *endpoints) drop(jobID string, re *runningEndpoint) {
	es.mu.Lock()
	defer es.mu.Unlock()
	if es.byJob[jobID] == re {
		delete(es.byJob, jobID)
	}
}

// get is a job's endpoint with its stats; false when it has none.
func (es *endpoints) get(jobID string) (Endpoint, bool) {
	es.mu.Lock()
	re := es.byJob[jobID]
	es.mu.Unlock()
	if re == nil {
		return Endpoint{}, false
	}
	return es.view(jobID, re), true
}

// load is the requests in flight at a job's endpoint and its replicas
// taking requests; false when the job has no endpoint.
func (es *endpoints) load(jobID string) (inFlight, replicas int, ok bool) {
	es.mu.Lock()
	re := es.byJob[jobID]
	es.mu.Unlock()
	if re == nil {
		return 0, 0, false
	}
	inFlight, replicas = re.ep.Load()
	return inFlight, replicas, true
}

// cost is the $ per million tokens a job's endpoint served so far; false
// without an endpoint or before any token.
func (es *endpoints) cost(jobID string) (usdPerMTok float64, ok bool) {
	v, has := es.get(jobID)
	if !has || v.Total.Tokens() == 0 {
		return 0, false
	}
	return v.Total.USDPerMTok, true
}

// view adds to the endpoint's stats what each lease's vouchers paid, and
// so $/1M tokens: per replica its lease's pay, for the service every
// lease of the job (replaced ones too) over every token served.
func (es *endpoints) view(jobID string, re *runningEndpoint) Endpoint {
	st := re.ep.Stats()
	v := Endpoint{Job: jobID, Port: re.port, Listen: re.ep.Addr().String(), Total: EndpointStats{Stats: st.Total}}
	if j, err := es.db.GetJob(jobID); err == nil {
		for _, id := range j.Leases {
			if l, err := es.db.GetLease(id); err == nil && l.Side == lease.SideRenter {
				v.Total.SpentUSD += float64(l.PaidMicro) / 1e6
			}
		}
	}
	v.Total.USDPerMTok = perMTok(v.Total.SpentUSD, st.Total.Tokens())
	for _, r := range st.Replicas {
		er := EndpointReplica{Lease: r.ID, Slot: r.Slot, Provider: r.Provider, Live: r.Live, EndpointStats: EndpointStats{Stats: r.Stats}}
		if l, err := es.db.GetLease(r.ID); err == nil {
			er.SpentUSD = float64(l.PaidMicro) / 1e6
		}
		er.USDPerMTok = perMTok(er.SpentUSD, r.Tokens())
		v.Replicas = append(v.Replicas, er)
	}
	slices.SortStableFunc(v.Replicas, func(a, b EndpointReplica) int {
		if a.Live != b.Live {
			if a.Live {
				return -1
			}
			return 1
		}
		return a.Slot - b.Slot
	})
	return v
}

// perMTok is usd per million tokens; 0 without tokens.
func perMTok(usd float64, tokens uint64) float64 {
	if tokens == 0 {
		return 0
	}
	return usd / float64(tokens) * 1e6
}
