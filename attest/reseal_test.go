package attest

import (
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
)

// TestReseal: a chain entry resealed unchanged opens as before; with a
// newer "v" it is a record of another version; bytes that are no
// envelope are an error, not a panic.
func TestReseal(t *testing.T) {
	key, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	chain, err := NewChain(key, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, _, err := chain.Append(1_700_000_000_000, &Fingerprint{Driver: "550.54.15", CUDA: "12.4", GPUs: []GPUFact{{
		UUID: "GPU-11111111-2222-3333-4444-555555555555", Name: "NVIDIA A10", PCIDeviceID: 0x223610de,
		MemoryMiB: 24564, ComputeCap: "8.6", PowerLimitMW: 150_000,
	}}})
	if err != nil {
		t.Fatal(err)
	}
	same, err := Reseal(raw, key, func(map[string]any) {})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := OpenEntry(same); err != nil {
		t.Fatalf("resealed unchanged: %v", err)
	}
	later, err := Reseal(raw, key, func(m map[string]any) { m["v"] = uint64(99) })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := OpenEntry(later); !FromOtherVersion(err) {
		t.Fatalf("resealed with v 99: %v, want a record of another version", err)
	}
	if _, err := Reseal([]byte("not an envelope"), key, func(map[string]any) {}); err == nil {
		t.Fatal("resealing bytes that are no envelope succeeded")
	}
}
