package auction

import (
	"slices"
	"testing"

	"github.com/ipfs/go-cid"
	mh "github.com/multiformats/go-multihash"

	"github.com/idlegrid/idlegrid/attest"
)

func TestCapabilityKeys(t *testing.T) {
	c := fixtureCapacity(t, 1)
	ds, err := cid.Decode(c.Datasets[0])
	if err != nil {
		t.Fatal(err)
	}
	// A dataset listed twice, and one too long to be a DHT key, are
	// announced once and not at all.
	sum, err := mh.Sum(make([]byte, attest.MaxCIDHashLen+1), mh.IDENTITY, -1)
	if err != nil {
		t.Fatal(err)
	}
	long := cid.NewCidV1(cid.Raw, sum)
	c.Datasets = append(c.Datasets, c.Datasets[0], long.String())
	want := []cid.Cid{CapabilityCID(CapabilityProvider), ds}
	if got := CapabilityKeys(c); !slices.Equal(got, want) {
		t.Errorf("CapabilityKeys = %v, want %v (the provider key, then each dataset once)", got, want)
	}
}

func TestCapabilityCIDIsPinned(t *testing.T) {
	// Pinned so that a change of codec or hash is noticed: every provider
	// and renter must derive the same key. Computed independently as
	// "b" + base32(0x01 0x55 0x12 0x20 || sha256(s)).
	const want = "bafkreidxcm24rul2ndg7tovdplj2h7cfwm3g4w6b7cq6munq7ir6w5nevu"
	got := CapabilityCID(CapabilityProvider)
	if got.Prefix().Version != 1 || got.Prefix().Codec != cid.Raw {
		t.Fatalf("prefix %+v", got.Prefix())
	}
	if got.String() != want {
		t.Errorf("CapabilityCID = %s, want %s", got, want)
	}
}
