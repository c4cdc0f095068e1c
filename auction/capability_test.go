package auction

import (
	"slices"
	"testing"

	"github.com/ipfs/go-cid"
)

func TestVRAMClasses(t *testing.T) {
	for _, tc := range []struct {
		name    string
		vramMiB uint64
		want    []uint64
	}{
		{"t4_16gb", 15360, []uint64{8, 16}}, // 15 GiB = 16.1 GB
		{"rtx4090_24gb", 24564, []uint64{8, 16, 24}},
		{"l40s_48gb", 46068, []uint64{8, 16, 24, 32, 40, 48}},
		{"h100_80gb", 81559, []uint64{8, 16, 24, 32, 40, 48, 80}},
		{"h200_141gb", 143771, []uint64{8, 16, 24, 32, 40, 48, 80, 96, 141}},
		{"tiny", 4096, nil},
		{"huge_no_overflow", 1 << 62, VRAMClassesGB},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := VRAMClasses(tc.vramMiB); !slices.Equal(got, tc.want) {
				t.Errorf("VRAMClasses(%d) = %v, want %v", tc.vramMiB, got, tc.want)
			}
		})
	}
}

func TestCapabilityStrings(t *testing.T) {
	got := CapabilityStrings(fixtureCapacity(t, 1))
	want := []string{
		"idlegrid:gpu:h100-80gb",
		"idlegrid:provider",
		"idlegrid:region:de",
		"idlegrid:runtime:docker",
		"idlegrid:runtime:wasm",
		"idlegrid:vram:16", "idlegrid:vram:24", "idlegrid:vram:32", "idlegrid:vram:40",
		"idlegrid:vram:48", "idlegrid:vram:8", "idlegrid:vram:80",
	}
	if !slices.Equal(got, want) {
		t.Errorf("CapabilityStrings =\n%q\nwant\n%q", got, want)
	}
}

func TestCapabilityKeys(t *testing.T) {
	c := fixtureCapacity(t, 1)
	keys := CapabilityKeys(c)
	strs := CapabilityStrings(c)
	if len(keys) != len(strs)+len(c.Datasets) {
		t.Fatalf("%d keys for %d strings and %d datasets", len(keys), len(strs), len(c.Datasets))
	}
	for i, s := range strs {
		if keys[i] != CapabilityCID(s) {
			t.Errorf("key %d is not CapabilityCID(%q)", i, s)
		}
	}
	ds, _ := cid.Decode(c.Datasets[0])
	if keys[len(keys)-1] != ds {
		t.Errorf("dataset key = %s, want %s", keys[len(keys)-1], ds)
	}
	for _, k := range keys {
		if len(k.Hash()) > 80 {
			t.Errorf("key %s has a %d-byte multihash", k, len(k.Hash()))
		}
	}
	for _, s := range strs {
		if len(s) > 80 {
			t.Errorf("capability string %q longer than 80 bytes", s)
		}
	}
}

func TestCapabilityCIDIsPinned(t *testing.T) {
	// Pinned so that a change of codec or hash is noticed: every provider
	// and renter must derive the same key. Computed independently as
	// "b" + base32(0x01 0x55 0x12 0x20 || sha256(s)).
	const want = "bafkreigm5oaiovbm2ppanpabo35rzgyzh7kbg4sg2cwfjedast7isv2peq"
	got := CapabilityCID("idlegrid:gpu:h100-80gb")
	if got.Prefix().Version != 1 || got.Prefix().Codec != cid.Raw {
		t.Fatalf("prefix %+v", got.Prefix())
	}
	if got.String() != want {
		t.Errorf("CapabilityCID = %s, want %s", got, want)
	}
}
