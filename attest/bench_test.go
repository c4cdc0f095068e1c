package attest

import (
	"testing"

	"github.com/libp2p/go-libp2p/core/record"
)

// telemetry8 returns a sealed telemetry entry for 8 GPUs and its chain.
func telemetry8(b *testing.B) ([]byte, *Chain, *Telemetry) {
	c, err := NewChain(testKey(b, providerSeed), nil)
	if err != nil {
		b.Fatal(err)
	}
	if _, _, err := c.Append(t0, fingerprintOf(8)); err != nil {
		b.Fatal(err)
	}
	var gpus []*simGPU
	lease := map[string][2]string{}
	for i := range 8 {
		gpus = append(gpus, newSimGPU(gpuUUID(i), uint64(i+1), 0.9))
		lease[gpuUUID(i)] = [2]string{leaseL1, peerOf(b, renterSeed)}
	}
	tel := window(b, t0, gpus, lease)
	raw, _, err := c.Append(t0+windowMs, tel)
	if err != nil {
		b.Fatal(err)
	}
	return raw, c, tel
}

// BenchmarkVerifyEntry opens and verifies one 8-GPU telemetry entry:
// size check, envelope, signature, strict decode, canonical re-encode,
// structure, signer == provider.
func BenchmarkVerifyEntry(b *testing.B) {
	raw, _, _ := telemetry8(b)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := OpenEntry(raw); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEd25519Verify is the raw signature check of a message the size
// of what the envelope of BenchmarkVerifyEntry signs: the floor for
// BenchmarkVerifyEntry.
func BenchmarkEd25519Verify(b *testing.B) {
	raw, _, _ := telemetry8(b)
	env, err := record.UnmarshalEnvelope(raw)
	if err != nil {
		b.Fatal(err)
	}
	// domain, payload type and payload, each with a uvarint length.
	msg := make([]byte, len(ChainEntryKind.Domain)+len(env.PayloadType)+len(env.RawPayload)+9)
	key := testKey(b, providerSeed)
	sig, err := key.Sign(msg)
	if err != nil {
		b.Fatal(err)
	}
	pub := key.GetPublic()
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for b.Loop() {
		if ok, err := pub.Verify(msg, sig); !ok || err != nil {
			b.Fatal("verify failed")
		}
	}
}

// BenchmarkChainAppend seals and links one 8-GPU telemetry entry.
func BenchmarkChainAppend(b *testing.B) {
	_, c, tel := telemetry8(b)
	at := t0 + windowMs
	b.ReportAllocs()
	for b.Loop() {
		at++
		if _, _, err := c.Append(at, tel); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifySegment verifies an hour-long lease segment (60 windows
// of 8 GPUs) with every check.
func BenchmarkVerifySegment(b *testing.B) {
	c, err := NewChain(testKey(b, providerSeed), nil)
	if err != nil {
		b.Fatal(err)
	}
	fp, _, _ := c.Append(t0, fingerprintOf(8))
	raws := [][]byte{fp}
	var gpus []*simGPU
	lease := map[string][2]string{}
	var uuids []string
	for i := range 8 {
		gpus = append(gpus, newSimGPU(gpuUUID(i), uint64(i+1), 0.9))
		lease[gpuUUID(i)] = [2]string{leaseL1, peerOf(b, renterSeed)}
		uuids = append(uuids, gpuUUID(i))
	}
	for w := range int64(60) {
		raw, _, err := c.Append(t0+(w+1)*windowMs, window(b, t0+w*windowMs, gpus, lease))
		if err != nil {
			b.Fatal(err)
		}
		raws = append(raws, raw)
	}
	opts := VerifyOptions{NowMs: t0 + 61*windowMs, Lease: &LeaseScope{ID: leaseL1, StartMs: t0, EndMs: t0 + 60*windowMs, GPUs: uuids}}
	if r := Verify(raws, opts); !r.OK() {
		b.Fatalf("segment does not verify:\n%s", r)
	}
	b.ReportAllocs()
	for b.Loop() {
		Verify(raws, opts)
	}
}
