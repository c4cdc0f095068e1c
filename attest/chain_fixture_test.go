package attest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
)

// Seeds of the test keys (testKey in record_test.go).
const (
	providerSeed = 2
	renterSeed   = 3
	renter2Seed  = 4
	reporterSeed = 5
	otherSeed    = 6
)

// t0 is 2026-03-02 12:00 UTC in Unix ms; windows are one minute.
const (
	t0       = int64(1_772_452_800_000)
	windowMs = int64(60_000)
)

func peerOf(t testing.TB, seed byte) string {
	t.Helper()
	id, err := peer.IDFromPrivateKey(testKey(t, seed))
	if err != nil {
		t.Fatal(err)
	}
	return id.String()
}

// fakeID is a record ID (and a valid CID) derived from a name.
func fakeID(name string) string { return RecordID([]byte(name)).String() }

func gpuUUID(i int) string { return fmt.Sprintf("GPU-8b7c1f2e-0000-4000-8000-%012d", i+1) }

// h100 is the fact of simulated H100 number i (700 W, 81559 MiB).
func h100(i int) GPUFact {
	return GPUFact{
		UUID: gpuUUID(i), Name: "NVIDIA H100 80GB HBM3", Serial: fmt.Sprintf("165232%07d", i+1),
		PCIBusID: fmt.Sprintf("00000000:%02X:00.0", 0x18+i*0x10), PCIDeviceID: 0x233010DE, VBIOS: "96.00.5E.00.01",
		MemoryMiB: 81559, ComputeCap: "9.0", PowerLimitMW: 700_000, MaxSMClockMHz: 1980, MaxMemClockMHz: 2619,
	}
}

const (
	h100IdleMW  = 70_000
	h100LimitMW = 700_000
)

func fingerprintOf(n int) *Fingerprint {
	f := &Fingerprint{Driver: "550.54.15", CUDA: "12.4"}
	for i := range n {
		f.GPUs = append(f.GPUs, h100(i))
	}
	return f
}

// simGPU produces samples the way node/gpu's sim does: power = idle +
// (limit-idle) x util^1.2 plus noise, an energy counter integrating power
// with the trapezoid rule, and the sim's cheating modes.
type simGPU struct {
	uuid             string
	rng              *rand.Rand
	util             float64 // 0..1
	energyMJ         float64
	powerMW          float64
	energyFactor     float64 // Cheat.EnergyFactor (0: honest)
	loadWithoutPower bool    // Cheat.LoadWithoutPower
	eccUncorr        uint64
}

func newSimGPU(uuid string, seed uint64, util float64) *simGPU {
	g := &simGPU{uuid: uuid, rng: rand.New(rand.NewPCG(seed, 1)), util: util, energyMJ: float64(seed) * 1e6}
	g.powerMW = g.draw()
	return g
}

func (g *simGPU) draw() float64 {
	u := g.util
	if g.loadWithoutPower {
		u = 0
	}
	w := h100IdleMW + (h100LimitMW-h100IdleMW)*math.Pow(u, 1.2) + g.rng.NormFloat64()*0.004*h100LimitMW
	return min(max(w, 0.8*h100IdleMW), h100LimitMW)
}

// step advances dt ms and returns the sample at atMs.
func (g *simGPU) step(atMs, dtMs int64) GPUSample {
	if dtMs > 0 {
		next := g.draw()
		f := 1.0
		if g.energyFactor > 0 {
			f = g.energyFactor
		}
		g.energyMJ += (g.powerMW + next) / 2 * float64(dtMs) / 1000 * f
		g.powerMW = next
	}
	util := g.util*100 + g.rng.NormFloat64()*0.7
	util = min(max(util, 0), 100)
	return GPUSample{
		UUID: g.uuid, AtMs: atMs, UtilBP: uint32(math.Round(util * 100)), MemUsedMiB: uint64(g.util * 60000),
		TempC: uint32(30 + 50*g.powerMW/h100LimitMW), PowerMW: uint64(g.powerMW), EnergyMJ: uint64(g.energyMJ),
		ECCUncorrected: g.eccUncorr,
	}
}

// window samples every GPU once a second over [start, start+windowMs] and
// returns the Telemetry body; lease maps UUIDs to (lease, renter).
func window(t testing.TB, start int64, gpus []*simGPU, lease map[string][2]string) *Telemetry {
	t.Helper()
	w := NewTelemetryWindow(start, "")
	for _, g := range gpus {
		if l, ok := lease[g.uuid]; ok {
			if err := w.Assign(g.uuid, l[0], l[1]); err != nil {
				t.Fatal(err)
			}
		}
		for ms := int64(0); ms <= windowMs; ms += 1000 {
			dt := int64(1000)
			if ms == 0 {
				dt = 0
			}
			if err := w.Add(g.step(start+ms, dt)); err != nil {
				t.Fatal(err)
			}
		}
	}
	tel, err := w.Close(start + windowMs)
	if err != nil {
		t.Fatal(err)
	}
	return tel
}

// segment is an honest lease segment: fingerprint, job started, three
// telemetry windows, job finished. GPU 0 runs lease L1; GPU 1 is idle.
type segment struct {
	raws    [][]byte
	entries []*Entry
	lease   LeaseScope
	key     crypto.PrivKey
	gpus    []*simGPU
}

var (
	leaseL1 = fakeID("lease-1")
	leaseL2 = fakeID("lease-2")
	jobCID  = fakeID("job")
	outCID  = fakeID("output")
)

func honestSegment(t testing.TB) *segment {
	t.Helper()
	return buildSegment(t, func(*simGPU) {})
}

// buildSegment builds the honest segment with cheat applied to GPU 0's
// simulation before the telemetry windows are sampled.
func buildSegment(t testing.TB, cheat func(g *simGPU)) *segment {
	t.Helper()
	key := testKey(t, providerSeed)
	c, err := NewChain(key, nil)
	if err != nil {
		t.Fatal(err)
	}
	renter := peerOf(t, renterSeed)
	s := &segment{key: key, gpus: []*simGPU{newSimGPU(gpuUUID(0), 1, 0.95), newSimGPU(gpuUUID(1), 2, 0)}}
	cheat(s.gpus[0])
	add := func(at int64, b Body) {
		raw, e, err := c.Append(at, b)
		if err != nil {
			t.Fatal(err)
		}
		s.raws, s.entries = append(s.raws, raw), append(s.entries, e)
	}
	add(t0-windowMs, fingerprintOf(2))
	start := t0
	add(start, &JobEvent{Lease: leaseL1, Renter: renter, Job: jobCID, Event: JobStarted, GPUs: []string{gpuUUID(0)}})
	for i := range int64(3) {
		ws := start + i*windowMs
		add(ws+windowMs+5, window(t, ws, s.gpus, map[string][2]string{gpuUUID(0): {leaseL1, renter}}))
	}
	end := start + 3*windowMs
	add(end+10, &JobEvent{Lease: leaseL1, Renter: renter, Job: jobCID, Event: JobFinished,
		GPUs: []string{gpuUUID(0)}, Output: outCID})
	s.lease = LeaseScope{ID: leaseL1, Renter: renter, StartMs: start, EndMs: end, GPUs: []string{gpuUUID(0)}}
	return s
}

// reseal re-signs entries in order with key, relinking seq and prev, so a
// test can craft segments Chain.Append would refuse to write.
func reseal(t testing.TB, key crypto.PrivKey, es []*Entry) [][]byte {
	t.Helper()
	var raws [][]byte
	prev := ""
	fp := ""
	for i, e := range es {
		e.Seq, e.Prev = uint64(i), prev
		if e.Telemetry != nil && e.Telemetry.Fingerprint == "" {
			e.Telemetry.Fingerprint = fp
		}
		raw, err := Seal(e, key)
		if err != nil {
			t.Fatal(err)
		}
		prev = RecordID(raw).String()
		if e.Kind == KindFingerprint {
			fp = prev
		}
		raws = append(raws, raw)
	}
	return raws
}

// opts returns the options an honest verifier of s would use.
func (s *segment) opts() VerifyOptions {
	l := s.lease
	return VerifyOptions{NowMs: t0 + 10*windowMs, Lease: &l}
}
