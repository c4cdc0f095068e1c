package node

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/attest"
)

// exportFixture builds an honest export: a fingerprint, a lease started on
// one GPU, three telemetry windows of a loaded GPU, and the lease's end.
func exportFixture(t testing.TB) []byte {
	t.Helper()
	sk, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	prov, _ := peer.IDFromPrivateKey(sk)
	c, err := attest.NewChain(sk, nil)
	if err != nil {
		t.Fatal(err)
	}
	const gpu = "GPU-11111111-2222-3333-4444-555555555555"
	lease := attest.RecordID([]byte("an award")).String()
	job := attest.RecordID([]byte("a job spec")).String()
	rsk, _, _ := crypto.GenerateEd25519Key(nil)
	rid, _ := peer.IDFromPrivateKey(rsk)
	start := time.Now().Add(-time.Minute).UnixMilli()
	x := attest.Export{Version: 1, Provider: prov.String()}
	x.Lease.ID, x.Lease.Renter, x.Lease.GPUs, x.Lease.StartMs = lease, rid.String(), []string{gpu}, start
	fp, _, err := c.Append(start-10, &attest.Fingerprint{Driver: "550.54.15", CUDA: "12.4", GPUs: []attest.GPUFact{{
		UUID: gpu, Name: "NVIDIA A10", PCIDeviceID: 0x223610de, MemoryMiB: 24564, ComputeCap: "8.6", PowerLimitMW: 150_000,
	}}})
	if err != nil {
		t.Fatal(err)
	}
	x.Fingerprints = [][]byte{fp}
	add := func(at int64, b attest.Body) {
		raw, _, err := c.Append(at, b)
		if err != nil {
			t.Fatal(err)
		}
		x.Entries = append(x.Entries, raw)
	}
	add(start, &attest.JobEvent{Lease: lease, Renter: rid.String(), Job: job, Event: attest.JobStarted, GPUs: []string{gpu}})
	energy := uint64(1_000_000)
	at := start
	for range 3 {
		w := attest.NewTelemetryWindow(at, "")
		if err := w.Assign(gpu, lease, rid.String()); err != nil {
			t.Fatal(err)
		}
		for i := range 10 {
			ts := at + int64(i)*1000
			if err := w.Add(attest.GPUSample{UUID: gpu, AtMs: ts, UtilBP: 9000, MemUsedMiB: 2048, TempC: 60, PowerMW: 120_000, EnergyMJ: energy}); err != nil {
				t.Fatal(err)
			}
			energy += 120_000 // mJ per second at 120 W
		}
		tel, err := w.Close(at + 10_000)
		if err != nil {
			t.Fatal(err)
		}
		at += 10_000
		add(at, tel)
	}
	x.Lease.EndMs = at
	add(at, &attest.JobEvent{Lease: lease, Renter: rid.String(), Job: job, Event: attest.JobFinished, GPUs: []string{gpu}})
	b, err := json.Marshal(&x)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestVerifyAttestationsHonestAndTampered(t *testing.T) {
	cfg := DefaultConfig(RoleRenter).Attest
	data := exportFixture(t)
	findings, ok, err := VerifyAttestations(data, cfg, time.Now())
	if err != nil || !ok {
		t.Fatalf("honest export: ok=%v err=%v findings=%+v", ok, err, findings)
	}
	if len(findings) < len(attest.Checks) {
		t.Fatalf("every check should report: %+v", findings)
	}
	// Drop an entry from the middle: continuity fails, by name.
	var x attest.Export
	if err := json.Unmarshal(data, &x); err != nil {
		t.Fatal(err)
	}
	x.Entries = append(x.Entries[:2:2], x.Entries[3:]...)
	cut, _ := json.Marshal(&x)
	findings, ok, err = VerifyAttestations(cut, cfg, time.Now())
	if err != nil || ok {
		t.Fatalf("export with a missing entry verified: %v", err)
	}
	failed := false
	for _, f := range findings {
		if !f.OK && f.Check == attest.CheckContinuity {
			failed = true
		}
	}
	if !failed {
		t.Fatalf("no continuity failure in %+v", findings)
	}
	for _, bad := range [][]byte{nil, []byte("{"), []byte(`{"version":2}`), make([]byte, 10)} {
		if _, _, err := VerifyAttestations(bad, cfg, time.Now()); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}

func FuzzVerifyAttestations(f *testing.F) {
	f.Add(exportFixture(f))
	f.Add([]byte(`{"version":1,"provider":"x","lease":{"id":"y"}}`))
	cfg := DefaultConfig(RoleRenter).Attest
	f.Fuzz(func(t *testing.T, data []byte) {
		findings, ok, err := VerifyAttestations(data, cfg, time.Now())
		if err == nil && ok && len(findings) == 0 {
			t.Fatal("ok without findings")
		}
	})
}
