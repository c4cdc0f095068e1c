package attest

import (
	"encoding/hex"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/idlegrid/idlegrid/attest/golden"
)

// goldenRecords returns one fixed value of each record encoding this
// package defines.
func goldenRecords(t testing.TB) map[string]any {
	s := honestSegment(t)
	raw, err := SealReceipt(testReceipt(t, sealedVoucher(t)), testKey(t, providerSeed))
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := OpenReceipt(raw)
	if err != nil {
		t.Fatal(err)
	}
	tel := *s.entries[3]
	g := tel.Telemetry.GPUs[0]
	g.XIDs, g.ECCCorrected, g.Throttle = []XID{{Code: 13, AtMs: t0 + windowMs + 1}}, 2, 0x4
	tel.Telemetry = &Telemetry{StartMs: tel.Telemetry.StartMs, EndMs: tel.Telemetry.EndMs,
		Fingerprint: tel.Telemetry.Fingerprint, GPUs: []GPUTelemetry{g, tel.Telemetry.GPUs[1]}}
	return map[string]any{
		"chain-entry-fingerprint": s.entries[0],
		"chain-entry-job":         s.entries[5],
		"chain-entry-telemetry":   &tel,
		"voucher":                 testVoucher(t),
		"receipt":                 r,
		"fraud-proof": &FraudProof{V: 1, Reporter: peerOf(t, reporterSeed), Kind: FraudEquivocation,
			Offender: peerOf(t, providerSeed), Entries: equivocationPair(t), AtMs: t0 + 10*windowMs},
		"wrong-result-proof": wrongResultProof(t, finishedClaim(t, providerSeed, jobCID, outWrong),
			finishedClaim(t, otherSeed, jobCID, outRight)),
		"chain-head": &Head{V: 1, Provider: peerOf(t, providerSeed), Seq: 5, ID: RecordID(s.raws[5]).String(),
			AtMs: s.entries[5].AtMs, Fingerprint: RecordID(s.raws[0]).String()},
	}
}

// TestRecordsGolden pins the CBOR payload encoding of one fixed value of
// each record: a change here is a wire-format change and needs a new
// version. Regenerate with: go test ./attest -run TestRecordsGolden -update
func TestRecordsGolden(t *testing.T) {
	for name, rec := range goldenRecords(t) {
		t.Run(name, func(t *testing.T) {
			payload, err := Marshal(rec)
			if err != nil {
				t.Fatal(err)
			}
			got := hex.EncodeToString(payload) + "\n"
			golden.Check(t, filepath.Join("testdata", name+".golden"), got)
			back := reflect.New(reflect.TypeOf(rec).Elem()).Interface()
			if err := Unmarshal(payload, back); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back, rec) {
				t.Errorf("golden payload decodes to %+v", back)
			}
		})
	}
}
