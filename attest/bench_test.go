package attest

import (
	"bytes"
	"encoding/binary"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
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

// BenchmarkVerifyVsEd25519 measures OpenEntry on one 8-GPU telemetry
// entry and the raw ed25519 check of the same signed message (what
// BenchmarkEd25519Verify does), interleaved in blocks of 16 so that load
// from other processes falls on both alike, and timed in process CPU time
// (cpuNow) so that time spent descheduled counts for neither. It reports
// both per-operation times and ratio = raw time / verify time: the
// verifier's throughput as a fraction of raw ed25519 verification.
func BenchmarkVerifyVsEd25519(b *testing.B) {
	compareVerify(b, func(n int, fn func()) {
		for range n {
			fn()
		}
	})
}

// BenchmarkVerifyVsEd25519Parallel is BenchmarkVerifyVsEd25519 with each
// block spread over GOMAXPROCS goroutines, for raw verification as for
// OpenEntry: the per-entry CPU cost in parallel, and the wall-clock
// throughput of both.
func BenchmarkVerifyVsEd25519Parallel(b *testing.B) {
	compareVerify(b, parallel)
}

func compareVerify(b *testing.B, run func(n int, fn func())) {
	raw, _, _ := telemetry8(b)
	msg, sig, pub := signedMessage(b, raw)
	const block = 16
	var cpuVerify, cpuRaw, wallVerify, wallRaw time.Duration
	n := 0
	rawVerify := func() {
		if ok, err := pub.Verify(msg, sig); !ok || err != nil {
			panic("raw verify failed")
		}
	}
	openEntry := func() {
		if _, err := OpenEntry(raw); err != nil {
			panic(err)
		}
	}
	for b.Loop() {
		c0, w0 := cpuNow(), time.Now()
		run(block, rawVerify)
		c1, w1 := cpuNow(), time.Now()
		run(block, openEntry)
		c2, w2 := cpuNow(), time.Now()
		cpuRaw += c1 - c0
		cpuVerify += c2 - c1
		wallRaw += w1.Sub(w0)
		wallVerify += w2.Sub(w1)
		n += block
	}
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(n) }
	b.ReportMetric(per(cpuVerify), "verify-cpu-ns/entry")
	b.ReportMetric(per(cpuRaw), "ed25519-cpu-ns/sig")
	b.ReportMetric(float64(cpuRaw)/float64(cpuVerify), "ratio")
	b.ReportMetric(float64(n)/wallVerify.Seconds(), "verify-entries/s")
	b.ReportMetric(float64(n)/wallRaw.Seconds(), "ed25519-sigs/s")
	b.ReportMetric(float64(wallRaw)/float64(wallVerify), "wall-ratio")
	b.ReportMetric(0, "ns/op")
}

// parallel runs fn n times over GOMAXPROCS goroutines.
func parallel(n int, fn func()) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				fn()
			}
		})
	}
	wg.Wait()
}

// signedMessage rebuilds what raw's signature covers (domain, payload
// type, payload, each behind its uvarint length) and returns it with its
// signature (ed25519 is deterministic: the envelope's) and the public key.
func signedMessage(b *testing.B, raw []byte) ([]byte, []byte, crypto.PubKey) {
	env, err := record.UnmarshalEnvelope(raw)
	if err != nil {
		b.Fatal(err)
	}
	var msg []byte
	for _, f := range [][]byte{[]byte(ChainEntryKind.Domain), env.PayloadType, env.RawPayload} {
		msg = binary.AppendUvarint(msg, uint64(len(f)))
		msg = append(msg, f...)
	}
	key := testKey(b, providerSeed)
	sig, err := key.Sign(msg)
	if err != nil {
		b.Fatal(err)
	}
	if !bytes.Contains(raw, sig) {
		b.Fatal("rebuilt message is not what the envelope signs")
	}
	return msg, sig, key.GetPublic()
}
