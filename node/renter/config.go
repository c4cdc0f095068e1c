package renter

import (
	"context"
	"log/slog"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/idlegrid/idlegrid/attest/reputation"
	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/auction/query"
	"github.com/idlegrid/idlegrid/node/executor"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/p2p"
	"github.com/idlegrid/idlegrid/store"
)

// Config is what the renter needs of the node's configuration.
type Config struct {
	// ReliabilityPrior is the reliability assumed for a provider with no
	// history, 0..1 (market.reliability_prior).
	ReliabilityPrior float64
	// Reauction re-runs the auction of a job whose lease was preempted
	// (market.reauction).
	Reauction bool
	// GoldNeedsBadge awards gold-tier work only to providers whose
	// reputation earned the gold badge (market.gold_needs_badge).
	GoldNeedsBadge bool
	// CanaryRate is the share of deterministic jobs re-run on a second
	// provider to check their output (canary.go), 0..1; 0: none.
	CanaryRate float64
	// ProviderTimeout is how long a running lease's provider may stay
	// silent before the lease is failed as unreachable (and its work
	// re-auctioned when Reauction is on); 0: only past the lease's end
	// (market.provider_timeout).
	ProviderTimeout time.Duration
	// WantBids is how many bids an RFQ for a one-GPU job asks for, over
	// all its shards (market.want_bids; 0: auction.DefaultWantBids); a job
	// of more GPUs asks more (auction.WantBidsFor).
	WantBids int
	// MaxWait is how long a job with no plan is auctioned again, from its
	// submission (market.max_wait; auctioneer_wait.go); 0: unfilled at
	// its first auction.
	MaxWait time.Duration
	Attest  lease.Terms // [attest]
	// CancelWait is how long a cancelled lease's provider gets to stop the
	// work (its stop grace) before the renter records it cancelled anyway.
	CancelWait time.Duration
	// DockerHost is the Docker engine a verifier image (job spec
	// `verifier: REF@sha256:…`) runs on ([executor] docker_host; empty:
	// $DOCKER_HOST or the local socket).
	DockerHost string
}

// Reputation is what the renter asks of this node's trust in providers.
type Reputation interface {
	// Of is the score and badge of one provider.
	Of(provider string) reputation.Result
	// Scores are every known provider's reliability, for the matcher.
	Scores() map[string]float64
	// LeaseEnded says a lease reached its outcome (a terminal state).
	LeaseEnded(l *store.Lease)
}

// Deps are the renter's collaborators.
type Deps struct {
	Logger *slog.Logger
	// Clock dates RFQs, awards, vouchers and job events; nil: time.Now.
	Clock  func() time.Time
	Key    crypto.PrivKey
	P2P    *p2p.Node
	Store  *store.DB
	Leases *lease.Book
	// Artifacts hold the WASM modules this renter serves its providers.
	Artifacts *executor.DirArtifacts
	// WorkDir holds downloaded results.
	WorkDir string
	// Offers is the market view: the offers of every known provider, for
	// the providers an auction expects to bid.
	Offers func(ctx context.Context) ([]query.Offer, error)
	// Shards lists the RFQ shards a job should be published on, from the
	// market view; nil: only the shards of the GPU models a job names.
	Shards func(r *auction.RFQ) []auction.Shard
	// RFQTopics are the topics an RFQ for shards goes to, one asking
	// everyone (auction.EveryoneBids) or not: a shard's own, or lots of it
	// (docs/protocol.md §3.6); nil: each shard's own.
	RFQTopics func(r *auction.RFQ, shards []auction.Shard, everyone bool) []auction.ShardTopic
	// ExpectBidders names the providers the bounded-bidding rule selects
	// for an RFQ published on topics, so the window closes once they all
	// answered; nil: every provider in the market view that could bid.
	ExpectBidders func(r *auction.RFQ, rfqID string, topics []auction.ShardTopic) map[string]bool
	// Reputation scores providers for the matcher and the gold badge.
	Reputation Reputation
	// PriceIndex is the network's cleared prices (trust's index of award
	// summaries): a second-price RFQ's default reserve per model
	// (auction.SecondPriceReserves). nil: no reserve.
	PriceIndex func(since, until time.Time) ([]auction.PriceStat, error)
	// ProviderRecord finds and verifies a current capacity record of a
	// bidding provider; a bid counts only when it backs the bid
	// (auction.BidBacking). It runs on the award's path, so it should
	// not wait on the DHT where it can help it (trust.BidRecord). nil:
	// bids are not checked (tests).
	ProviderRecord func(ctx context.Context, id peer.ID) (*auction.Capacity, error)
	// ReportFraud hands a sealed fraud proof this renter built (a double
	// lease it caught) to trust, which applies and gossips it.
	ReportFraud func(proof []byte)
	// JudgeWrongResult verifies a sealed wrong-result proof by re-running
	// its job (trust) and returns the provider proven wrong. nil: a
	// canary's disagreement stays unproven (both jobs unverified).
	JudgeWrongResult func(ctx context.Context, proof []byte) (peer.ID, error)
	// WithholdPayment is the payment policy: true for a lease withholds
	// its next voucher (a dispute, a budget cap). nil pays whatever
	// verified telemetry covers.
	WithholdPayment func(leaseID string) bool
	// Registerer gets the service forwards' metrics; nil: none.
	Registerer prometheus.Registerer
}
