package auction

import (
	"bytes"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
)

// fixedNow is the clock of every test: records are issued at it.
var fixedNow = time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)

// testKey returns a deterministic Ed25519 key (seeded), so sealed bytes are
// reproducible: Ed25519 signatures are deterministic.
func testKey(t testing.TB, seed byte) (crypto.PrivKey, peer.ID) {
	t.Helper()
	sk, _, err := crypto.GenerateEd25519Key(bytes.NewReader(bytes.Repeat([]byte{seed}, 64)))
	if err != nil {
		t.Fatal(err)
	}
	id, err := peer.IDFromPrivateKey(sk)
	if err != nil {
		t.Fatal(err)
	}
	return sk, id
}

// fixtureCapacity is a fully populated record owned by testKey(seed).
func fixtureCapacity(t testing.TB, seed byte) *Capacity {
	_, id := testKey(t, seed)
	return &Capacity{
		V:           CapacityVersion,
		Peer:        id.String(),
		Seq:         7,
		IssuedAtMs:  fixedNow.UnixMilli(),
		ExpiresAtMs: fixedNow.Add(30 * time.Minute).UnixMilli(),
		GPUs: []GPU{
			{Index: 0, UUID: "GPU-8b7c1f2e-0000-4000-8000-000000000001", Model: "h100-80gb",
				Name: "NVIDIA H100 80GB HBM3", VRAMMiB: 81559, ComputeCap: "9.0", Free: true},
			{Index: 1, UUID: "GPU-8b7c1f2e-0000-4000-8000-000000000002", Model: "h100-80gb",
				Name: "NVIDIA H100 80GB HBM3", VRAMMiB: 81559, ComputeCap: "9.0", LeaseID: "lease-42"},
		},
		Host:         Host{CPUCores: 64, RAMMiB: 512 << 10, DiskGiB: 3500, BandwidthMbps: 10_000},
		Region:       Region{Country: "de", Zone: "fra-1"},
		Reachability: ReachPublic,
		Runtimes:     []string{RuntimeDocker, RuntimeWasm},
		Floor:        FloorPrice{Gold: 3_200_000, Silver: 2_400_000, Bronze: 1_100_000},
		Calendar: []Window{
			{Day: time.Monday, StartMin: 0, EndMin: 8 * 60, FactorPermille: 800},
			{Day: time.Monday, StartMin: 8 * 60, EndMin: 1440, FactorPermille: 1200},
		},
		Policy: Policy{
			Tiers:          []Tier{TierGold, TierSilver, TierBronze},
			MaxDurationSec: 86400,
			AllowedImages:  []string{"sha256:3f1a9c", "ghcr.io/acme/*"},
			Egress:         true,
		},
		Datasets:      []string{"bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy"},
		FingerprintID: "bafkreie5cvv4h45feyfbrngcjr6ciuu3rakm3x6m3mjwn2hsdshfnkifl4",
		Version:       "idlegrid/0.1.0",
	}
}

func mustSealCapacity(t testing.TB, c *Capacity, key crypto.PrivKey) []byte {
	t.Helper()
	raw, err := SealCapacity(c, key)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}
