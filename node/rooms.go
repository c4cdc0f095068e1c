package node

import (
	"context"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/executor"
	"github.com/idlegrid/idlegrid/node/forward"
	"github.com/idlegrid/idlegrid/node/gpu"
	"github.com/idlegrid/idlegrid/node/jobproto"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/node/provider"
	"github.com/idlegrid/idlegrid/node/renter"
	"github.com/idlegrid/idlegrid/node/trust"
	"github.com/idlegrid/idlegrid/p2p"
)

// buildRooms builds trust, and the provider or renter room of the node's
// role, from the node's parts. Each room gets only what its Deps name;
// where one room needs another (the renter asks trust for reputation, a
// provider learns from trust that an auction closed), the node passes a
// method value here, and nowhere else.
func (n *Node) buildRooms(deps Deps, artifacts *executor.DirArtifacts, undo *[]func() error) error {
	var err error
	tdeps := trust.Deps{
		Logger: n.log.With("component", "trust"), Clock: time.Now, Key: n.key, P2P: n.p2p, Store: n.db,
		Replay: replayer(n.workDir, deps.ReplayExecutor), Registerer: n.reg,
	}
	if n.cfg.Role == RoleRenter {
		tdeps.OnShard = n.followDigests
		n.rLots.look = make(chan struct{}, 1)
		tdeps.OnLots = n.lookAtLots
	}
	if n.cfg.Role == RoleProvider {
		n.gpus = deps.GPU
		if n.gpus == nil {
			if n.gpus, err = gpu.Open(n.cfg.GPU, n.log.With("component", "gpu")); err != nil {
				return err
			}
		}
		*undo = append(*undo, n.gpus.Close)
		if n.provider, err = provider.New(provider.Config{
			Offer: n.cfg.Provider, Executor: n.cfg.Executor, Attest: n.cfg.Attest, BeatEvery: n.cfg.P2P.TelemetryGossipEvery, Home: n.cfg.Home, Version: Version,
			Costs: n.cfg.Costs,
		}, provider.Deps{
			Logger: n.log, Clock: time.Now, Key: n.key, P2P: n.p2p, Store: n.db, Leases: n.leases, GPU: n.gpus,
			Artifacts: artifacts, WorkDir: n.workDir, Executors: deps.Executors, AdmitAward: deps.AdmitAward,
			ShardView: n.shardView, NotePrefix: n.notePrefix, FollowLots: n.followLot, LotsNamed: n.lotsNamed, LotsFor: deps.LotsFor, PriceIndex: n.priceIndex, Registerer: n.reg,
		}); err != nil {
			return err
		}
		*undo = append(*undo, n.provider.Close)
		if n.ops, err = n.opsMetrics(); err != nil {
			return err
		}
		// Advertise only the runtimes that can run here.
		n.cfg.Provider.Runtimes = n.provider.Offered().Runtimes
		tdeps.OnSummary = n.provider.AuctionClosed
		tdeps.OnAbandon = n.provider.AbandonNoted
		tdeps.SyncShards = n.provider.Shards
		tdeps.LeaseEntries = n.provider.LeaseEntries
		tdeps.OwnRecord = n.provider.SealedCapacity
	}
	m := n.cfg.Market
	if n.trust, err = trust.New(trust.Config{
		ReliabilityPrior: m.ReliabilityPrior, Refresh: m.Refresh, SearchTimeout: m.SearchTimeout, BeatEvery: n.cfg.P2P.TelemetryGossipEvery,
		FraudRepeatEvery: n.cfg.P2P.FraudRepeatEvery,
	}, tdeps); err != nil {
		return err
	}
	n.rfqGate = n.trust.RFQGate()
	if n.cfg.Role == RoleRenter {
		if n.renter, err = renter.New(renter.Config{
			ReliabilityPrior: m.ReliabilityPrior, Reauction: m.Reauction, GoldNeedsBadge: m.GoldNeedsBadge, WantBids: m.WantBids,
			ProviderTimeout: m.ProviderTimeout, CanaryRate: m.CanaryRate, MaxWait: m.MaxWait,
			Attest: n.cfg.Attest, CancelWait: n.cfg.Executor.StopGrace, DockerHost: n.cfg.Executor.DockerHost,
		}, renter.Deps{
			Logger: n.log, Clock: time.Now, Key: n.key, P2P: n.p2p, Store: n.db, Leases: n.leases,
			Artifacts: artifacts, WorkDir: n.workDir,
			Offers: n.trust.Offers, Shards: n.trust.ShardsFor, RFQTopics: n.trust.RFQTopics, ExpectBidders: n.trust.ExpectedBidders,
			ProviderRecord: n.trust.BidRecord,
			Reputation:     n.trust.Reputation(), ReportFraud: n.trust.ApplyFraud, PriceIndex: n.trust.PriceIndex,
			JudgeWrongResult: func(ctx context.Context, proof []byte) (peer.ID, error) {
				return n.trust.JudgeWrongResult(ctx, n.p2p.ID(), proof)
			},
			WithholdPayment: deps.WithholdPayment, Registerer: n.reg,
		}); err != nil {
			return err
		}
	}
	return nil
}

// route registers the stream protocols each room serves. Gossip is routed
// in onGossip.
func (n *Node) route() {
	if n.provider != nil {
		n.p2p.HandleRequests(lease.LeaseProto, "idlegrid.lease", lease.LeaseLimits, n.provider.HandleAward)
		n.p2p.HandleTunnel(forward.Proto, "idlegrid.forward", forward.TunnelLimits, n.provider.HandleTunnel)
	}
	if n.renter != nil {
		n.p2p.HandleRequests(lease.BidProto, "idlegrid.bid", lease.BidLimits, n.handleBid)
		n.p2p.HandleRequests(lease.PreemptProto, "idlegrid.preempt", lease.PreemptLimits, n.renter.HandlePreempt)
	}
	if n.provider != nil || n.renter != nil {
		n.p2p.HandleFrames(lease.JobProto, "idlegrid.job", lease.JobLimits, n.handleJob)
	}
	n.p2p.HandleRequests(trust.DigestsProto, "idlegrid.digests", trust.DigestsLimits, n.trust.ServeDigests)
	n.p2p.HandleRequests(trust.RecordsProto, "idlegrid.records", trust.RecordsLimits, n.trust.ServeRecords)
	n.p2p.SetValidatorFactory(n.shardValidator)
}

// handleBid hands a bid to the renter and, when the renter took it, tells
// trust: a provider that answers is evidence the market view counts
// (node/trust/evidence.go).
func (n *Node) handleBid(ctx context.Context, from peer.ID, req []byte) ([]byte, error) {
	resp, err := n.renter.HandleBid(ctx, from, req)
	if err == nil {
		if bid, _, oerr := auction.OpenBid(req); oerr == nil {
			n.trust.NoteBid(bid.RFQ, bid.Provider)
		}
	}
	return resp, err
}

// shardView is trust's book of one shard, for the provider's bid
// decision. trust is built after the provider, so it is read late.
func (n *Node) shardView(s auction.Shard) []*auction.Digest {
	if n.trust == nil {
		return nil
	}
	return n.trust.Digests(s)
}

// lotsNamed is trust's count of a shard's backed providers by the lot
// count each names, for the provider's lots (read late, as shardView).
func (n *Node) lotsNamed(s auction.Shard) map[int]int {
	if n.trust == nil {
		return nil
	}
	return n.trust.LotCounts(s)
}

// notePrefix hands a bid decision's always-bid prefix to trust, which
// compares it with the RFQ's award summary (read late, as shardView).
func (n *Node) notePrefix(rfqID, renter string, always []string) {
	if n.trust != nil {
		n.trust.NotePrefix(rfqID, renter, always)
	}
}

// priceIndex is trust's price index, for the provider's scarcity cap.
func (n *Node) priceIndex(since, until time.Time) ([]auction.PriceStat, error) {
	if n.trust == nil {
		return nil, nil
	}
	return n.trust.PriceIndex(since, until)
}

// followDigests subscribes a renter to the digest and attestation topics of a
// shard it just learnt of, keeping its market view of that shard current.
func (n *Node) followDigests(s auction.Shard) {
	n.runCtxMu.Lock()
	ctx := n.runCtx
	n.runCtxMu.Unlock()
	if ctx == nil || ctx.Err() != nil {
		return
	}
	if err := n.follow(ctx, s.DigestTopic()); err != nil {
		n.log.Debug("follow shard digests", "shard", s, "err", err)
	}
	// The shard's attestation records: its providers' heartbeats
	// (uptime evidence of the providers this renter may rent from, and
	// their chains' equivocations), its leases' award summaries (the
	// price index) and receipts (reputation).
	if err := n.follow(ctx, s.AttestTopic()); err != nil {
		n.log.Debug("follow shard attestations", "shard", s, "err", err)
	}
}

// handleJob routes a job-protocol request to the side that serves it. A
// request the node cannot serve is answered with an error header, never
// with a reset, so the client learns why.
func (n *Node) handleJob(ctx context.Context, from peer.ID, raw []byte, send func([]byte) error) error {
	req, err := jobproto.DecodeRequest(raw)
	if err != nil {
		return lease.Refuse(send, jobproto.CodeInvalid, "%v", err)
	}
	switch req.Op {
	case jobproto.OpSpec, jobproto.OpArtifact:
		if n.renter == nil {
			return lease.Refuse(send, jobproto.CodeNotFound, "this node is not a renter")
		}
		return n.renter.ServeJob(ctx, from, req, send)
	default:
		if n.provider == nil {
			return lease.Refuse(send, jobproto.CodeNotFound, "this node is not a provider")
		}
		return n.provider.ServeJob(ctx, from, req, send)
	}
}

// maxConcurrentRFQs bounds the RFQs of renters that paid this provider
// before that it answers at once; beyond it, RFQs wait for a slot (the
// subscription buffer absorbs bursts). maxFreshRFQs bounds those of
// other renters, whose keys are free: an RFQ holds its slot while the bid
// goes out (up to the bid protocol's 5 s to a renter that does not
// answer), so a flood of fresh keys' RFQs (each within its budgets) held
// every slot, and a paying renter's RFQ, delivered one at a time behind
// them, got its bid after its window closed (TestFreshKeyRFQChurn, on a
// loaded machine). A fresh renter's RFQ that finds no slot is dropped,
// never waited for, so it cannot hold up the delivery of the others.
const (
	maxConcurrentRFQs = 64
	maxFreshRFQs      = 32
)

// onGossip returns the handler of validated messages on a topic.
func (n *Node) onGossip(ctx context.Context, topic string) func(p2p.Message) {
	slots := make(chan struct{}, maxConcurrentRFQs)
	fresh := make(chan struct{}, maxFreshRFQs)
	return func(m p2p.Message) {
		// The log names a message's author: its gossip signer when it is
		// signed, else the key its record is sealed with, which the
		// topic's validator checked before delivery.
		author := m.From
		if author == "" {
			author, _ = attest.ClaimedSigner(m.Data)
		}
		n.gossip.Add(m.Topic, author, m.ReceivedFrom, m.Data)
		switch topic {
		case p2p.TopicRFQ:
			if n.provider == nil {
				return
			}
			pool := slots
			if rfq, ok := m.Record.(*auction.RFQ); !ok || !n.provider.RenterPaid(rfq.Renter) {
				pool = fresh
				select {
				case pool <- struct{}{}:
				default:
					n.log.Debug("RFQ of a renter without evidence dropped: every slot for them is busy", "author", author)
					return
				}
			} else {
				select {
				case pool <- struct{}{}:
				case <-ctx.Done():
					return
				}
			}
			go func() {
				defer func() { <-pool }()
				n.provider.HandleRFQ(ctx, m)
			}()
		case p2p.TopicAttest:
			n.trust.OnAttest(ctx, m.Data, m.Record)
		case p2p.TopicFraud:
			n.trust.ApplyFraud(m.Data)
		}
	}
}
