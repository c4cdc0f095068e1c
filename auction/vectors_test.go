package auction

import (
	"bytes"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/attest/golden"
)

// vectorKind is one record kind of this package as a test vector: a fixed
// value, sealed with a fixed key, and where it travels.
type vectorKind struct {
	name  string
	file  string // testdata/vectors/<file>.json; empty: name
	value attest.Payload
	key   crypto.PrivKey
	seal  func() ([]byte, error)
	open  func([]byte) (any, peer.ID, error)
	topic string // the gossip topic a vector shows it on; empty for streams and the DHT
}

// vectorKinds lists every record kind this package defines, from the
// fixtures the golden tests use (fixedNow, testKey), so a vector changes
// only when a fixture or the wire format does.
func vectorKinds(t testing.TB) []vectorKind {
	var out []vectorKind
	topics := map[string]string{
		// An RFQ for a100 or h100 GPUs goes to both families' shards;
		// the vector shows one.
		"rfq":           Shard("gpu/h100").RFQTopic(),
		"award-summary": Shard("gpu/h100").AttestTopic(), // the fixture's model is h100-80gb
		"abandon-note":  "idlegrid/attest/1",
	}
	for _, k := range msgKinds {
		m := k.fixture(t)
		key, _ := testKey(t, k.ownerSeed)
		out = append(out, vectorKind{
			name: k.golden, value: m, key: key, topic: topics[k.golden],
			seal: func() ([]byte, error) { return k.seal(m, key) },
			open: func(raw []byte) (any, peer.ID, error) { return k.open(raw) },
		})
	}
	capKey, _ := testKey(t, 1)
	c := fixtureCapacity(t, 1)
	out = append(out, vectorKind{
		name: "capacity", value: c, key: capKey,
		seal: func() ([]byte, error) { return SealCapacity(c, capKey) },
		open: func(raw []byte) (any, peer.ID, error) { return OpenCapacity(raw) },
	})
	digKey, _ := testKey(t, 2)
	d := fixtureDigest(t, 2)
	out = append(out, vectorKind{
		name: "capacity-digest", value: d, key: digKey, topic: d.Shards()[0].DigestTopic(),
		seal: func() ([]byte, error) { return SealDigest(d, digKey) },
		open: func(raw []byte) (any, peer.ID, error) { return OpenDigest(raw) },
	})
	// Optional fields added later, shown on records that carry them.
	lots := fixtureLotsDigest(t)
	out = append(out, vectorKind{
		name: "capacity-digest", file: "capacity-digest-lots", value: lots, key: digKey,
		topic: LotTopic(GPUShard("h100").DigestTopic(), Lot(lots.Peer, 32), 32),
		seal:  func() ([]byte, error) { return SealDigest(lots, digKey) },
		open:  func(raw []byte) (any, peer.ID, error) { return OpenDigest(raw) },
	})
	warm := fixtureCapacity(t, 1)
	warm.Models = []string{testModelID}
	out = append(out, vectorKind{
		name: "capacity", file: "capacity-models", value: warm, key: capKey,
		seal: func() ([]byte, error) { return SealCapacity(warm, capKey) },
		open: func(raw []byte) (any, peer.ID, error) { return OpenCapacity(raw) },
	})
	rfqKey, _ := testKey(t, msgRenterSeed)
	withModel := msgRFQ(t)
	withModel.Model = &ModelRef{ID: testModelID, SizeMiB: 15_258}
	out = append(out, vectorKind{
		name: "rfq", file: "rfq-model", value: withModel, key: rfqKey, topic: topics["rfq"],
		seal: func() ([]byte, error) { return SealRFQ(withModel, rfqKey) },
		open: func(raw []byte) (any, peer.ID, error) { return OpenRFQ(raw) },
	})
	return out
}

// TestVectors checks the protocol test vectors of this package's record
// kinds (testdata/vectors, docs/protocol.md §5.2): the fixed value encodes
// to the vector's payload, seals to its envelope and IDs, and the
// vector's envelope opens, verifies and decodes to the value. After a
// deliberate change of a fixture or the wire format, regenerate with
// go test ./auction -run TestVectors -update
func TestVectors(t *testing.T) {
	for _, k := range vectorKinds(t) {
		if k.file == "" {
			k.file = k.name
		}
		t.Run(k.file, func(t *testing.T) {
			kind := k.value.RecordKind()
			if kind.Name != k.name {
				t.Fatalf("vector %q is of kind %q", k.name, kind.Name)
			}
			payload, err := attest.Marshal(k.value)
			if err != nil {
				t.Fatal(err)
			}
			env, err := k.seal()
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", "vectors", k.file+".json")
			golden.CheckVector(t, path, golden.NewVector(t, golden.VectorInput{
				Kind: kind.Name, Domain: kind.Domain, PayloadType: string(kind.PayloadType), Key: k.key,
				Payload: payload, Envelope: env, RecordID: attest.RecordID(env).String(), Topic: k.topic,
			}))

			// Decode what the file holds, as a peer would.
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
			if err := attest.Unmarshal(filePayload, back); err != nil || !reflect.DeepEqual(back, k.value) {
				t.Errorf("vector payload decodes to %+v (%v)", back, err)
			}
			if again, err := attest.Marshal(back.(attest.Payload)); err != nil || !bytes.Equal(again, filePayload) {
				t.Errorf("vector payload does not re-encode to itself (%v)", err)
			}
			if id := attest.RecordID(fileEnv).String(); id != v.RecordID {
				t.Errorf("record ID %s, vector says %s", id, v.RecordID)
			}
		})
	}
}
