package provider

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/node/gpu"
	"github.com/idlegrid/idlegrid/store"
)

// Benchmarks of the provider's trust path (docs/benchmarks.md, "Trust"):
// what the attestor does per telemetry sample and per window.

// sim8 returns 8 simulated H100s on a fake clock that advances one second
// per read, so each Sample is a new second of physics.
func sim8(b *testing.B) *gpu.Sim {
	b.Helper()
	now := time.UnixMilli(1_700_000_000_000)
	profiles := make([]string, 8)
	for i := range profiles {
		profiles[i] = "h100-sxm-80gb"
	}
	s, err := gpu.NewSim(gpu.SimConfig{Profiles: profiles, Seed: 1, Clock: func() time.Time {
		now = now.Add(time.Second)
		return now
	}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// BenchmarkSampleStep is one tick of the attestor's sampler with 8 GPUs:
// gpu.Sim.Sample, then toAttestSample and TelemetryWindow.Add per GPU.
// At attest.sample=1s the sampler's CPU share is about ns/op / 1e9.
func BenchmarkSampleStep(b *testing.B) {
	s := sim8(b)
	ctx := context.Background()
	w := attest.NewTelemetryWindow(1, "")
	b.ReportAllocs()
	for b.Loop() {
		samples, err := s.Sample(ctx)
		if err != nil || len(samples) != 8 {
			b.Fatalf("%d samples: %v", len(samples), err)
		}
		for _, x := range samples {
			if err := w.Add(toAttestSample(x)); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkChainAppendStore appends 8-GPU telemetry entries to a chain
// and stores each as the provider does (attestor.append): PutChainEntry
// then PutChainHead, on a real badger store in a temp dir.
//
//	sync:         the provider's path: the entry written with sync=true,
//	              then the head (PutChainHead always syncs): two fsyncs
//	entry-nosync: the entry with sync=false, the head still synced: one
//	in-memory:    store.Options{InMemory: true}: no disk, no fsync, the
//	              ceiling set by signing and badger's bookkeeping
func BenchmarkChainAppendStore(b *testing.B) {
	b.Run("sync", func(b *testing.B) { benchAppendStore(b, true, false) })
	b.Run("entry-nosync", func(b *testing.B) { benchAppendStore(b, false, false) })
	b.Run("in-memory", func(b *testing.B) { benchAppendStore(b, false, true) })
}

func benchAppendStore(b *testing.B, sync, inMemory bool) {
	db, err := store.Open(b.TempDir(), store.Options{InMemory: inMemory})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	key, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	chain, err := attest.NewChain(key, nil)
	if err != nil {
		b.Fatal(err)
	}
	renterKey, _, _ := crypto.GenerateEd25519Key(rand.Reader)
	renter, _ := peer.IDFromPrivateKey(renterKey)

	// A fingerprint from the sim, then one real 60-sample window leased
	// to one renter, appended over and over with advancing times.
	s := sim8(b)
	devs, err := s.Devices()
	if err != nil {
		b.Fatal(err)
	}
	fp := &attest.Fingerprint{Driver: "550.54.15", CUDA: "12.4"}
	for _, d := range devs {
		fp.GPUs = append(fp.GPUs, attest.GPUFact{UUID: d.UUID, Name: d.Name, PCIDeviceID: d.PCIDeviceID,
			MemoryMiB: d.MemoryMiB, ComputeCap: "9.0", PowerLimitMW: uint64(d.PowerLimitW * 1000)})
	}
	at := int64(1_700_000_000_000)
	fpRaw, _, err := chain.Append(at, fp)
	if err != nil {
		b.Fatal(err)
	}
	lease := attest.RecordID([]byte("lease")).String()
	w := attest.NewTelemetryWindow(at, attest.RecordID(fpRaw).String())
	for _, d := range devs {
		if err := w.Assign(d.UUID, lease, renter.String()); err != nil {
			b.Fatal(err)
		}
	}
	for range 60 {
		samples, err := s.Sample(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		for _, x := range samples {
			x.Time = time.UnixMilli(at + 1)
			if err := w.Add(toAttestSample(x)); err != nil {
				b.Fatal(err)
			}
		}
	}
	tel, err := w.Close(at + 60_000)
	if err != nil {
		b.Fatal(err)
	}
	var bytes int64
	b.ReportAllocs()
	for b.Loop() {
		at += 60_000
		tel.StartMs, tel.EndMs = at-60_000, at
		raw, e, err := chain.Append(at, tel)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := db.PutChainEntry(e.Provider, e.Seq, raw, sync); err != nil {
			b.Fatal(err)
		}
		head, err := attest.MarshalHead(chain.Head())
		if err != nil {
			b.Fatal(err)
		}
		if err := db.PutChainHead(head); err != nil {
			b.Fatal(err)
		}
		bytes += int64(len(raw))
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(bytes)/float64(b.N), "entry-bytes")
}
