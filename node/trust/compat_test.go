package trust

import (
	"context"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/roomtest"
	"github.com/idlegrid/idlegrid/p2p"
)

// laterRecord signs raw's payload, changed by edit, again under raw's
// kind with key: a record as a later release of the protocol could write
// it (or, with edit removing "v", as no release writes it).
func laterRecord(t *testing.T, raw []byte, key crypto.PrivKey, edit func(map[string]any)) []byte {
	t.Helper()
	out, err := attest.Reseal(raw, key, edit)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var (
	newerVersion = func(m map[string]any) { m["v"] = uint64(99) }
	unknownField = func(m map[string]any) { m["zz_added_later"] = "x" }
	noVersion    = func(m map[string]any) { delete(m, "v") }
)

// TestValidatorsSkipOtherVersions: on every gossip topic, a record of a
// newer version, or one with a field this release does not know, is
// skipped (dropped, never charged: p2p.Skip), while a record that no
// release writes (no version) is still rejected. docs/protocol.md,
// "Compatibility".
func TestValidatorsSkipOtherVersions(t *testing.T) {
	peers := roomtest.Peers(t, 2)
	tr := newTrust(t, peers[0])
	prov := peers[1]
	ctx := context.Background()
	now := prov.Clock.Now()

	rfq := sealTestRFQ(t, prov.Key, time.Now())
	gate := NewRFQGate(RFQGateDeps{Now: time.Now})
	digest := sealedDigest(t, prov.Key, now, 2)
	chain, err := attest.NewChain(prov.Key, nil)
	if err != nil {
		t.Fatal(err)
	}
	entry, _, err := chain.Append(now.UnixMilli(), &attest.Fingerprint{Driver: "550.54.15", CUDA: "12.4", GPUs: []attest.GPUFact{{
		UUID: "GPU-11111111-2222-3333-4444-555555555555", Name: "NVIDIA A10", PCIDeviceID: 0x223610de,
		MemoryMiB: 24564, ComputeCap: "8.6", PowerLimitMW: 150_000,
	}}})
	if err != nil {
		t.Fatal(err)
	}
	proof, err := attest.Seal(&attest.FraudProof{V: attest.RecordsVersion, Reporter: prov.ID.String(), Kind: attest.FraudEquivocation,
		Offender: prov.ID.String(), Entries: [][]byte{entry, entry}, AtMs: now.UnixMilli()}, prov.Key)
	if err != nil {
		t.Fatal(err)
	}

	validators := []struct {
		name  string
		raw   []byte
		check p2p.RecordValidator
	}{
		{"rfq", rfq, gate.Validator(p2p.TopicRFQ)},
		{"digest", digest, p2p.NoRecord(tr.ValidateDigest(auction.GPUShard("a10").DigestTopic()))},
		{"chain_entry", entry, tr.ValidateAttest},
		{"fraud_proof", proof, p2p.NoRecord(tr.ValidateFraud)},
	}
	for _, v := range validators {
		for _, c := range []struct {
			name string
			edit func(map[string]any)
			want p2p.Verdict
		}{
			{"newer_version", newerVersion, p2p.Skip},
			{"unknown_field", unknownField, p2p.Skip},
			{"no_version", noVersion, p2p.Reject},
		} {
			t.Run(v.name+"/"+c.name, func(t *testing.T) {
				raw := laterRecord(t, v.raw, prov.Key, c.edit)
				if got, _ := v.check(ctx, prov.ID, prov.ID, raw); got != c.want {
					t.Fatalf("verdict %v, want %v", got, c.want)
				}
			})
		}
	}
}
