package attest

import (
	"bytes"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/attest/golden"
)

// vectorKind is one record kind of this package as a test vector: a fixed
// value, sealed with a fixed key, and the topic it is gossiped on (only
// telemetry entries, the heartbeat, of the chain: the others travel over
// the job protocol).
type vectorKind struct {
	name  string // the vector's file name
	value Payload
	key   crypto.PrivKey
	// open is the kind's own opener (structure and evidence checks
	// included) returning the decoded value and its signer.
	open  func([]byte) (any, peer.ID, error)
	topic string
}

func openAs[T any, P interface {
	*T
	Payload
}](check func([]byte) error) func([]byte) (any, peer.ID, error) {
	return func(raw []byte) (any, peer.ID, error) {
		if err := check(raw); err != nil {
			return nil, "", err
		}
		v, signer, err := Open[T, P](raw, 0)
		return v, signer, err
	}
}

// vectorKinds lists every record kind this package defines, from the
// values its golden tests pin (goldenRecords).
func vectorKinds(t testing.TB) []vectorKind {
	g := goldenRecords(t)
	provider, renter, reporter := testKey(t, providerSeed), testKey(t, renterSeed), testKey(t, reporterSeed)
	openEntry := openAs[Entry](func(raw []byte) error { _, err := OpenEntry(raw); return err })
	// Heartbeats and receipts go to the attestation topic of the
	// provider's (the lease's) shard; the vectors show an H100 shard's.
	const attestTopic, fraudTopic = "idlegrid/attest/1/gpu/h100", "idlegrid/fraud/1"
	return []vectorKind{
		{"chain-entry-fingerprint", g["chain-entry-fingerprint"].(Payload), provider, openEntry, ""},
		{"chain-entry-telemetry", g["chain-entry-telemetry"].(Payload), provider, openEntry, attestTopic},
		{"chain-entry-job", g["chain-entry-job"].(Payload), provider, openEntry, ""},
		{"voucher", g["voucher"].(Payload), renter,
			openAs[Voucher](func(raw []byte) error { _, err := OpenVoucher(raw); return err }), ""},
		{"receipt", g["receipt"].(Payload), provider,
			openAs[Receipt](func(raw []byte) error { _, _, err := OpenReceipt(raw); return err }), attestTopic},
		{"fraud-proof", g["fraud-proof"].(Payload), reporter,
			openAs[FraudProof](func(raw []byte) error { _, err := VerifyFraudProof(raw); return err }), fraudTopic},
		{"wrong-result-proof", g["wrong-result-proof"].(Payload), reporter,
			openAs[WrongResultProof](func(raw []byte) error {
				w, err := OpenWrongResult(raw)
				if err == nil {
					_, err = w.Claim(now)
				}
				return err
			}), fraudTopic},
	}
}

// TestVectors checks the protocol test vectors of this package's record
// kinds (testdata/vectors, docs/protocol.md §5.2): the fixed value encodes
// to the vector's payload, seals to its envelope and IDs, and the
// vector's envelope opens, verifies and decodes to the value. After a
// deliberate change of a fixture or the wire format, regenerate with
// go test ./attest -run TestVectors -update
func TestVectors(t *testing.T) {
	for _, k := range vectorKinds(t) {
		t.Run(k.name, func(t *testing.T) {
			kind := k.value.RecordKind()
			payload, err := Marshal(k.value)
			if err != nil {
				t.Fatal(err)
			}
			env, err := Seal(k.value, k.key)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", "vectors", k.name+".json")
			golden.CheckVector(t, path, golden.NewVector(t, golden.VectorInput{
				Kind: kind.Name, Domain: kind.Domain, PayloadType: string(kind.PayloadType), Key: k.key,
				Payload: payload, Envelope: env, RecordID: RecordID(env).String(), Topic: k.topic,
			}))

			v, filePayload, fileEnv := golden.ReadVector(t, path)
			got, signer, err := k.open(fileEnv)
			if err != nil {
				t.Fatalf("vector envelope does not open: %v", err)
			}
			if !reflect.DeepEqual(got, k.value) {
				t.Errorf("vector envelope decodes to %+v, want %+v", got, k.value)
			}
			if signer.String() != v.Signer {
				t.Errorf("signer %s, vector says %s", signer, v.Signer)
			}
			back := reflect.New(reflect.TypeOf(k.value).Elem()).Interface()
			if err := Unmarshal(filePayload, back); err != nil || !reflect.DeepEqual(back, k.value) {
				t.Errorf("vector payload decodes to %+v (%v)", back, err)
			}
			if again, err := Marshal(back.(Payload)); err != nil || !bytes.Equal(again, filePayload) {
				t.Errorf("vector payload does not re-encode to itself (%v)", err)
			}
			if id := RecordID(fileEnv).String(); id != v.RecordID {
				t.Errorf("record ID %s, vector says %s", id, v.RecordID)
			}
		})
	}
}
