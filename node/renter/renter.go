// Package renter is the buyer's side of the market: it turns job specs
// into signed RFQs, runs the reverse auction (bids, the pure matcher,
// awards passed to the next-best bid on a decline), follows its leases'
// work over the job protocol (with failover and re-auction on preemption),
// pays for verified telemetry with vouchers (the payer), and fetches logs
// and results. The node routes bids, preemption notices and job-protocol
// requests to it; it knows neither the provider nor trust.
//
// The Renter is a facade: New builds the room's components (the bid
// windows, the auctioneer and its awarder, the job driver, the follower,
// the payments, the preemption notices, the job server, the fetcher, the
// forwards and the submitter), each from its own deps, and wires them
// with callbacks; no component holds the Renter.
package renter

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/executor"
	"github.com/idlegrid/idlegrid/node/forward"
	"github.com/idlegrid/idlegrid/node/jobproto"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/p2p"
	"github.com/idlegrid/idlegrid/store"
)

// Renter is the buyer's room: it turns job specs into signed RFQs,
// collects bids, runs the pure matcher and turns the plan into
// countersigned leases (passing an award to the next-best bid when a
// winner declines or does not answer), follows the leases' work, pays for
// it with vouchers, and fetches logs and results.
type Renter struct {
	now       func() time.Time
	self      peer.ID
	db        *store.DB
	artifacts *executor.DirArtifacts
	jobs      *jobTracker
	bg        *background

	bids       *bidWindows
	auctioneer *auctioneer
	driver     *jobDriver
	runs       *jobRuns
	follower   *follower
	preempts   *preemptions
	payments   *payments
	server     *jobServer
	fetcher    *fetcher
	forwards   *forwards
	endpoints  *endpoints
	submitter  *submitter
}

// jobCaller calls a provider's job protocol.
type jobCaller func(ctx context.Context, to peer.ID, req *jobproto.Request) (*jobproto.Header, *p2p.Frames, error)

// New builds the renter room: its components, each from its own deps,
// wired to one another with callbacks.
func New(cfg Config, deps Deps) (*Renter, error) {
	if deps.Key == nil || deps.P2P == nil || deps.Store == nil || deps.Leases == nil || deps.Reputation == nil || deps.Offers == nil {
		return nil, errors.New("renter.New: key, p2p, store, lease book, reputation and market view are required")
	}
	log, now := deps.Logger, deps.Clock
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if now == nil {
		now = time.Now
	}
	if cfg.WantBids <= 0 {
		cfg.WantBids = auction.DefaultWantBids
	}
	reportFraud := deps.ReportFraud
	if reportFraud == nil {
		reportFraud = func([]byte) {}
	}
	network, self := deps.P2P, deps.P2P.ID()
	call := func(ctx context.Context, to peer.ID, req *jobproto.Request) (*jobproto.Header, *p2p.Frames, error) {
		return lease.Call(ctx, network, to, req)
	}
	r := &Renter{
		now: now, self: self, db: deps.Store, artifacts: deps.Artifacts,
		jobs: newJobTracker(deps.Store, now, log.With("component", "jobs")),
		bg:   &background{},
		runs: newJobRuns(),
	}
	inflight, avoid, slots := newInflightAwards(), newAvoidList(), newReplicaSlots()
	rtt := newRTTProber(network.MeasureRTT, r.bg.Go)
	r.bids = newBidWindows(bidWindowDeps{now: now, notify: r.jobs.notify, measure: rtt.measureBidder})
	r.auctioneer = &auctioneer{
		auctioneerDeps: auctioneerDeps{
			log: log, now: now, key: deps.Key, self: self, p2p: network, jobs: r.jobs, bids: r.bids,
			offers: deps.Offers, shards: deps.Shards, rfqTopics: deps.RFQTopics, expectBidders: deps.ExpectBidders,
		},
		wantBids: cfg.WantBids,
		maxWait:  cfg.MaxWait,
		waitPace: newWaitPace(),
		silence:  newShardSilence(),
		awarder: &awarder{
			awarderDeps: awarderDeps{
				log: log, now: now, key: deps.Key, self: self, p2p: network, leases: deps.Leases, jobs: r.jobs,
				rep: deps.Reputation, inflight: inflight, avoid: avoid, record: deps.ProviderRecord,
				priceIndex: deps.PriceIndex, measuredRTT: rtt.measured,
			},
			reliabilityPrior: cfg.ReliabilityPrior, goldNeedsBadge: cfg.GoldNeedsBadge, terms: cfg.Attest.Limits(),
		},
	}
	r.fetcher = newFetcher(fetcherDeps{log: log, db: deps.Store, call: call}, filepath.Join(deps.WorkDir, "downloads"))
	verifier := &completionVerifier{verifierDeps{
		log: log, now: now, db: deps.Store, leases: deps.Leases, jobs: r.jobs, terms: cfg.Attest, call: call,
		download: func(ctx context.Context, jobID, leaseID string) error {
			_, _, err := r.fetcher.result(ctx, jobID, leaseID)
			return err
		},
		leaseEnded: deps.Reputation.LeaseEnded,
	}}
	r.follower = &follower{
		followerDeps: followerDeps{
			log: log, now: now, db: deps.Store, leases: deps.Leases, jobs: r.jobs, call: call,
			leaseEnded: deps.Reputation.LeaseEnded, background: r.bg.Go, verify: verifier.verify,
		},
		providerTimeout: cfg.ProviderTimeout, cancelWait: cfg.CancelWait,
	}
	r.preempts = newPreemptions(preemptDeps{
		log: log, now: now, db: deps.Store, leases: deps.Leases, jobs: r.jobs,
		background: r.bg.Go, finish: r.follower.finishLease,
	})
	r.payments = newPayments(payerDeps{
		log: log, now: now, key: deps.Key, self: self, db: deps.Store, leases: deps.Leases, jobs: r.jobs,
		call: call, withhold: deps.WithholdPayment, reportFraud: reportFraud,
		publishFraud: func(ctx context.Context, proof []byte) error {
			return network.Publish(ctx, p2p.TopicFraud, proof, 0)
		},
		failUnhealthy: r.follower.failUnhealthy,
	})
	r.driver = &jobDriver{
		jobDriverDeps: jobDriverDeps{
			log: log, db: deps.Store, jobs: r.jobs, bg: r.bg, runs: r.runs, avoid: avoid,
			auction: r.auctioneer.run, follow: r.follower.followLease, cancelLease: r.follower.cancelLease,
			pay: r.payments.payLease, settle: r.payments.fetchReceipt, preemptions: r.preempts.of,
			slots: slots, now: now,
			load: func(jobID string) (int, int, bool) { return r.endpoints.load(jobID) },
			cost: func(jobID string) (float64, bool) { return r.endpoints.cost(jobID) },
		},
		reauction: cfg.Reauction, canaryRate: cfg.CanaryRate, maxWait: cfg.MaxWait,
	}
	r.server = &jobServer{db: deps.Store, artifacts: deps.Artifacts, inflight: inflight}
	r.forwards = &forwards{forwardDeps: forwardDeps{
		log: log, now: now, db: deps.Store, registerer: deps.Registerer, watch: r.jobs.watch, background: r.bg.Go,
		openTunnel: func(ctx context.Context, p peer.ID, hdr []byte) (io.ReadWriteCloser, error) {
			return network.OpenTunnel(ctx, p, forward.Proto, hdr, forward.TunnelLimits)
		},
	}}
	r.endpoints = &endpoints{endpointDeps: endpointDeps{
		log: log, now: now, db: deps.Store, registerer: deps.Registerer, watch: r.jobs.watch, background: r.bg.Go,
		openTunnel: r.forwards.openTunnel, slots: slots,
		saveTokens: func(jobID string, prompt, completion uint64) error {
			_, err := r.jobs.update(jobID, store.JobEvent{}, func(j *store.Job) { j.PromptTokens, j.CompletionTokens = prompt, completion })
			return err
		},
	}}
	r.submitter = &submitter{submitterDeps: submitterDeps{
		now: now, self: self, db: deps.Store, jobs: r.jobs, artifacts: deps.Artifacts, offers: deps.Offers,
		start: r.driver.start, avoid: avoid.add,
	}}
	r.driver.submitCanary = r.submitter.canary
	r.driver.overturn = verifier.overturn
	if deps.Artifacts != nil {
		judge := newOutputJudge(log, filepath.Join(deps.WorkDir, "verifier"), deps.Artifacts, cfg.DockerHost,
			func(ctx context.Context, jobID, leaseID string) (string, error) {
				_, p, err := r.fetcher.result(ctx, jobID, leaseID)
				return p, err
			})
		r.driver.judgeOutputs = judge.judge
	}
	if deps.JudgeWrongResult != nil {
		r.driver.prover = &wrongResultProver{
			log: log, now: now, key: deps.Key, self: self, artifacts: deps.Artifacts, readChain: verifier.readChain,
			judge: deps.JudgeWrongResult, report: reportFraud, publish: r.payments.publishFraud,
		}
	}
	return r, nil
}

// Run resumes the jobs and settlements a restart interrupted and keeps the
// renter's context for background auctions until ctx ends, then waits for
// them.
func (r *Renter) Run(ctx context.Context) error {
	r.bg.start(ctx)
	r.driver.resume(ctx)
	r.payments.resumeSettling(r.bg.Go)
	<-ctx.Done()
	r.bg.wait()
	return nil
}

// ID is the renter's peer ID.
func (r *Renter) ID() peer.ID { return r.self }
