package auction

import (
	"bytes"
	"testing"

	"github.com/idlegrid/idlegrid/attest"
)

// TestCapacityHeldFlag: a GPU under a firm hold keeps its flag through
// sealing and opening, and a record without held GPUs encodes exactly as
// before the field existed (no "held" key at all).
func TestCapacityHeldFlag(t *testing.T) {
	key, _ := testKey(t, 1)
	in := fixtureCapacity(t, 1)
	plain, err := attest.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(plain, []byte("held")) {
		t.Fatal("a record without held GPUs encodes a held key")
	}
	in.GPUs[0].Held = true
	out, _, err := OpenCapacity(mustSealCapacity(t, in, key))
	if err != nil {
		t.Fatal(err)
	}
	if !out.GPUs[0].Held || out.GPUs[1].Held {
		t.Fatalf("held flags after a round trip: %v, %v; want true, false", out.GPUs[0].Held, out.GPUs[1].Held)
	}
}
