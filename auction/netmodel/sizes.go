package netmodel

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"strings"
	"time"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/auction"
	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	mh "github.com/multiformats/go-multihash"
)

// Sizes are the bytes of one message of each kind as sealed by the real
// codecs (auction.SealRFQ, SealBid, SealDigest), before transport framing.
type Sizes struct {
	RFQ, Bid, Digest int
}

// MeasureSizes seals a typical message of each kind: a 1-GPU docker RFQ
// for one family with two renter addresses and want_bids set, a 1-GPU bid,
// and the digest of a host with one GPU model and both runtimes.
func MeasureSizes() (Sizes, error) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	rk, renter, err := seededKey(1)
	if err != nil {
		return Sizes{}, err
	}
	pk, prov, err := seededKey(2)
	if err != nil {
		return Sizes{}, err
	}
	job := contentID("job")
	rfq := &auction.RFQ{
		V: auction.MessagesVersion, Renter: renter, JobCID: job, Nonce: bytes.Repeat([]byte{7}, auction.NonceLen),
		IssuedAtMs: now.UnixMilli(), ExpiresAtMs: now.Add(11 * time.Second).UnixMilli(),
		Resources: auction.Resources{GPUs: 1, Models: []string{"a10"}, MinVRAMMiB: 20_000},
		Runtime:   auction.RuntimeDocker, Image: "ghcr.io/acme/train:2.3@sha256:" + strings.Repeat("3f1a9c0b", 8),
		Tier: auction.TierSilver, MaxPriceMicro: 1_500_000, ExpectedDurationSec: 3600, MaxDurationSec: 7200,
		BidWindowMs: 500, Pricing: auction.PaySecond, WantBids: auction.DefaultWantBids,
		Addrs: []string{"/ip4/192.0.2.7/tcp/7401/p2p/" + renter, "/ip4/192.0.2.7/udp/7401/quic-v1/p2p/" + renter},
	}
	rawRFQ, err := auction.SealRFQ(rfq, rk)
	if err != nil {
		return Sizes{}, fmt.Errorf("netmodel.MeasureSizes: %w", err)
	}
	bid := &auction.Bid{
		V: auction.MessagesVersion, Provider: prov, RFQ: attest.RecordID(rawRFQ).String(), JobCID: job,
		PriceMicro: 1_200_000, GPUs: []string{"GPU-8b7c1f2e-0000-4000-8000-000000000001"}, Model: "a10-24gb",
		VRAMMiB: 23028, Region: "de", EarliestStartMs: now.UnixMilli(), IssuedAtMs: now.UnixMilli(),
		ValidUntilMs: now.Add(time.Minute).UnixMilli(),
	}
	rawBid, err := auction.SealBid(bid, pk)
	if err != nil {
		return Sizes{}, fmt.Errorf("netmodel.MeasureSizes: %w", err)
	}
	capRec := &auction.Capacity{
		V: auction.CapacityVersion, Peer: prov, Seq: 12, IssuedAtMs: now.UnixMilli(), ExpiresAtMs: now.Add(30 * time.Minute).UnixMilli(),
		Host: auction.Host{CPUCores: 32, RAMMiB: 128 << 10, DiskGiB: 2000, BandwidthMbps: 1000}, Region: auction.Region{Country: "de"},
		Reachability: auction.ReachPublic, Runtimes: []string{auction.RuntimeDocker, auction.RuntimeWasm},
		Floor:  auction.FloorPrice{Silver: 1_100_000, Bronze: 600_000},
		Policy: auction.Policy{Tiers: []auction.Tier{auction.TierSilver, auction.TierBronze}}, Version: "idlegrid/0.1.0",
	}
	for i := range 4 {
		capRec.GPUs = append(capRec.GPUs, auction.GPU{Index: uint32(i), UUID: fmt.Sprintf("GPU-%d", i), Model: "a10-24gb",
			Name: "NVIDIA A10", VRAMMiB: 23028, ComputeCap: "8.6", Free: i < 3})
	}
	d, err := auction.NewDigest(auction.DigestInput{Capacity: capRec, Seq: 40, Now: now, TTL: 30 * time.Minute})
	if err != nil {
		return Sizes{}, fmt.Errorf("netmodel.MeasureSizes: %w", err)
	}
	rawDigest, err := auction.SealDigest(d, pk)
	if err != nil {
		return Sizes{}, fmt.Errorf("netmodel.MeasureSizes: %w", err)
	}
	return Sizes{RFQ: len(rawRFQ), Bid: len(rawBid), Digest: len(rawDigest)}, nil
}

func seededKey(seed byte) (crypto.PrivKey, string, error) {
	sk, _, err := crypto.GenerateEd25519Key(bytes.NewReader(bytes.Repeat([]byte{seed}, 64)))
	if err != nil {
		return nil, "", fmt.Errorf("netmodel: key: %w", err)
	}
	id, err := peer.IDFromPrivateKey(sk)
	if err != nil {
		return nil, "", fmt.Errorf("netmodel: key: %w", err)
	}
	return sk, id.String(), nil
}

func contentID(name string) string {
	sum := sha256.Sum256([]byte(name))
	h, _ := mh.Encode(sum[:], mh.SHA2_256) // a 32-byte sha2-256 digest always encodes
	return cid.NewCidV1(cid.DagCBOR, h).String()
}
