// Package auctiontest builds signed auction records for tests of the
// rooms and clusters that consume them: what a party, honest or not, can
// sign with its own keys.
package auctiontest

import (
	"crypto/rand"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/auction"
)

// Lease is the terms of an award summary to sign.
type Lease struct {
	Model      string // model slug of the GPUs
	Tier       auction.Tier
	GPUs       int
	PriceMicro uint64
	At         time.Time
	// Bidders the renter vouches for (sorted peer IDs).
	Bidders []string
}

// Summary seals the award summary of a lease that renter awarded and
// provider accepted, as a renter gossips it: both keys sign their half.
// A pair of keys made up on the spot makes a valid one.
func Summary(renter, provider crypto.PrivKey, l Lease) ([]byte, error) {
	rid, err := peer.IDFromPrivateKey(renter)
	if err != nil {
		return nil, err
	}
	pid, err := peer.IDFromPrivateKey(provider)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, auction.NonceLen)
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	gpus := make([]string, l.GPUs)
	for i := range gpus {
		gpus[i] = fmt.Sprintf("GPU-%08x-0000-4000-8000-%012d", nonce[:4], i)
	}
	at := l.At.UnixMilli()
	award, err := auction.SealAward(&auction.Award{
		V: auction.MessagesVersion, Renter: rid.String(), Provider: pid.String(),
		RFQ: attest.RecordID(append([]byte("rfq"), nonce...)).String(), Bid: attest.RecordID(append([]byte("bid"), nonce...)).String(),
		JobCID: auction.CapabilityCID("job").String(), GPUs: gpus, PriceMicro: l.PriceMicro, Tier: l.Tier,
		MaxDurationSec: 60, Part: 1, Parts: 1, Nonce: nonce, IssuedAtMs: at, ExpiresAtMs: at + 30_000,
	}, renter)
	if err != nil {
		return nil, err
	}
	accept, err := auction.SealLeaseAcceptance(&auction.LeaseAcceptance{
		V: auction.MessagesVersion, Provider: pid.String(), Award: attest.RecordID(award).String(),
		GPUs: gpus, AcceptedMs: at, StartsAtMs: at,
	}, provider)
	if err != nil {
		return nil, err
	}
	s, err := auction.SummaryOfLease(award, accept, l.Model, l.Bidders, l.At)
	if err != nil {
		return nil, err
	}
	return auction.SealAwardSummary(s, renter)
}
