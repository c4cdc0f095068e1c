package attest

import (
	"slices"
	"strings"
	"testing"
)

func TestVerifyHonestSegment(t *testing.T) {
	s := honestSegment(t)
	r := Verify(s.raws, s.opts())
	if !r.OK() {
		t.Fatalf("honest segment failed:\n%s", r)
	}
	for _, c := range Checks {
		if !slices.ContainsFunc(r.Findings, func(f Finding) bool { return f.Check == c && f.OK }) {
			t.Errorf("no OK finding for check %s", c)
		}
	}
	if r.Provider != peerOf(t, providerSeed) {
		t.Errorf("provider = %s", r.Provider)
	}
}

// verifyCase crafts a bad segment from an honest one; Verify must fail
// the named check with a message containing msg.
type verifyCase struct {
	name  string
	check string
	msg   string
	// mutate changes the entries (then resealed) or returns raws itself.
	mutate func(t *testing.T, s *segment, o *VerifyOptions) [][]byte
}

// resealWith mutates entries and reseals the whole segment.
func resealWith(f func(es []*Entry)) func(t *testing.T, s *segment, o *VerifyOptions) [][]byte {
	return func(t *testing.T, s *segment, o *VerifyOptions) [][]byte {
		f(s.entries)
		return reseal(t, s.key, s.entries)
	}
}

func tel(es []*Entry, i int) *GPUTelemetry { return &es[2+i].Telemetry.GPUs[0] }

func verifyCases() []verifyCase {
	return []verifyCase{
		{"flipped_byte", CheckSignature, "bad signature", func(t *testing.T, s *segment, o *VerifyOptions) [][]byte {
			s.raws[2][len(s.raws[2])-1] ^= 1
			return s.raws
		}},
		{"signed_by_another_key", CheckSignature, "signer is not the named author", func(t *testing.T, s *segment, o *VerifyOptions) [][]byte {
			raws := reseal(t, s.key, s.entries)
			forged, err := Seal(s.entries[3], testKey(t, otherSeed))
			if err != nil {
				t.Fatal(err)
			}
			raws[3] = forged
			return raws
		}},
		{"another_providers_entry", CheckSignature, "the segment is", func(t *testing.T, s *segment, o *VerifyOptions) [][]byte {
			o.Provider = peerOf(t, otherSeed)
			return s.raws
		}},
		{"gap", CheckContinuity, "gap: seq jumps from 2 to 4", func(t *testing.T, s *segment, o *VerifyOptions) [][]byte {
			return slices.Delete(s.raws, 3, 4)
		}},
		{"fork", CheckContinuity, "fork: two different entries with seq 3", func(t *testing.T, s *segment, o *VerifyOptions) [][]byte {
			alt := *s.entries[3]
			alt.AtMs++
			raw, err := Seal(&alt, s.key)
			if err != nil {
				t.Fatal(err)
			}
			return slices.Insert(s.raws, 4, raw)
		}},
		{"broken_link", CheckContinuity, "broken link", func(t *testing.T, s *segment, o *VerifyOptions) [][]byte {
			e := *s.entries[4]
			e.Prev = fakeID("elsewhere")
			raw, err := Seal(&e, s.key)
			if err != nil {
				t.Fatal(err)
			}
			s.raws[4] = raw
			return s.raws
		}},
		{"duplicate", CheckContinuity, "appears twice", func(t *testing.T, s *segment, o *VerifyOptions) [][]byte {
			return slices.Insert(s.raws, 3, s.raws[2])
		}},
		{"time_goes_back", CheckTime, "at_ms goes back", resealWith(func(es []*Entry) { es[3].AtMs = es[1].AtMs - 1 })},
		{"future", CheckTime, "in the future", func(t *testing.T, s *segment, o *VerifyOptions) [][]byte {
			o.NowMs = t0
			return s.raws
		}},
		{"window_after_entry", CheckTime, "after the entry's at_ms", resealWith(func(es []*Entry) { es[2].AtMs = es[2].Telemetry.EndMs - 1 })},
		{"windows_overlap", CheckTime, "overlaps seq 2's window", resealWith(func(es []*Entry) { es[3].Telemetry.StartMs -= 1000 })},
		{"xid_outside_window", CheckTime, "outside the window", resealWith(func(es []*Entry) {
			tel(es, 0).XIDs = []XID{{Code: 13, AtMs: t0 - 1}}
		})},
		{"unknown_fingerprint", CheckFingerprint, "neither in the segment", func(t *testing.T, s *segment, o *VerifyOptions) [][]byte {
			return s.raws[1:] // the fingerprint entry left out, and not in opts
		}},
		{"stale_fingerprint", CheckFingerprint, "the one in force", resealWith(func(es []*Entry) {
			es[3].Telemetry.Fingerprint = fakeID("old fingerprint")
		})},
		{"gpu_not_in_fingerprint", CheckFingerprint, "is not in fingerprint", resealWith(func(es []*Entry) {
			es[0].Fingerprint.GPUs = es[0].Fingerprint.GPUs[:1]
			es[2].Telemetry.Fingerprint = ""
			es[3].Telemetry.Fingerprint = ""
			es[4].Telemetry.Fingerprint = ""
		})},
		{"uuid_clash", CheckUUIDClash, "also claimed by provider", func(t *testing.T, s *segment, o *VerifyOptions) [][]byte {
			o.KnownUUIDs = map[string]string{gpuUUID(1): peerOf(t, otherSeed), gpuUUID(0): peerOf(t, providerSeed)}
			return s.raws
		}},
		{"util_over_100", CheckRanges, "utilization", resealWith(func(es []*Entry) { tel(es, 0).UtilMaxBP = 10001 })},
		{"util_unordered", CheckRanges, "not ordered", resealWith(func(es []*Entry) { tel(es, 1).UtilMinBP = tel(es, 1).UtilAvgBP + 1 })},
		{"power_over_limit", CheckRanges, "exceeds 1.05 x", resealWith(func(es []*Entry) { tel(es, 0).PowerMaxMW = 736_000 })},
		{"memory_over_total", CheckRanges, "exceeds the 81559 MiB total", resealWith(func(es []*Entry) { tel(es, 0).MemUsedMaxMiB = 90000 })},
		{"too_hot", CheckRanges, "temperature", resealWith(func(es []*Entry) { tel(es, 0).TempMaxC = 180 })},
		{"energy_inflated", CheckEnergy, "off average power", resealWith(func(es []*Entry) { tel(es, 0).EnergyMJ *= 2 })},
		{"energy_short", CheckEnergy, "covers only", resealWith(func(es []*Entry) { tel(es, 0).EnergyMs = 1000 })},
		{"energy_too_long", CheckEnergy, "longer than the", resealWith(func(es []*Entry) { tel(es, 0).EnergyMs = 70_000 })},
		{"load_idle_power", CheckLoadPower, "load without power", resealWith(func(es []*Entry) {
			g := tel(es, 0)
			g.PowerAvgMW, g.PowerMaxMW, g.EnergyMJ = 70_000, 75_000, 70*g.EnergyMs
		})},
		{"hardware_xid", CheckHealth, "hardware XID 79", resealWith(func(es []*Entry) {
			tel(es, 1).XIDs = []XID{{Code: 79, AtMs: t0 + windowMs + 5}}
		})},
		{"uncorrectable_ecc", CheckHealth, "uncorrectable ECC", resealWith(func(es []*Entry) { tel(es, 0).ECCUncorrected = 2 })},
		{"coverage_hole", CheckCoverage, "without telemetry for the lease", func(t *testing.T, s *segment, o *VerifyOptions) [][]byte {
			g := tel(s.entries, 1)
			g.Lease, g.Renter = "", ""
			o.MaxGapMs = windowMs / 2
			return reseal(t, s.key, s.entries)
		}},
		{"coverage_short", CheckCoverage, "before the lease ended", func(t *testing.T, s *segment, o *VerifyOptions) [][]byte {
			o.Lease.EndMs += 10 * windowMs
			return s.raws
		}},
		{"coverage_other_gpu", CheckCoverage, "no telemetry attributes it", func(t *testing.T, s *segment, o *VerifyOptions) [][]byte {
			o.Lease.GPUs = append(o.Lease.GPUs, gpuUUID(1))
			return s.raws
		}},
		{"coverage_wrong_renter", CheckCoverage, "window names renter", func(t *testing.T, s *segment, o *VerifyOptions) [][]byte {
			o.Lease.Renter = peerOf(t, renter2Seed)
			return s.raws
		}},
		{"coverage_gpu_given_away", CheckCoverage, "gives the GPU to lease", resealWith(func(es []*Entry) {
			tel(es, 1).Lease = leaseL2
		})},
	}
}

func TestVerifyChecksFail(t *testing.T) {
	for _, tc := range verifyCases() {
		t.Run(tc.name, func(t *testing.T) {
			s := honestSegment(t)
			o := s.opts()
			raws := tc.mutate(t, s, &o)
			r := Verify(raws, o)
			if !r.Failed(tc.check) {
				t.Fatalf("check %s did not fail:\n%s", tc.check, r)
			}
			if !slices.ContainsFunc(r.Failures(), func(f Finding) bool {
				return f.Check == tc.check && strings.Contains(f.Message, tc.msg)
			}) {
				t.Errorf("no %s failure mentions %q:\n%s", tc.check, tc.msg, r)
			}
		})
	}
}

// TestVerifyResealIsHonest guards the crafted cases: resealing the honest
// segment unchanged must still pass.
func TestVerifyResealIsHonest(t *testing.T) {
	s := honestSegment(t)
	raws := reseal(t, s.key, s.entries)
	for i := range raws {
		if string(raws[i]) != string(s.raws[i]) {
			t.Fatalf("reseal changed entry %d", i)
		}
	}
}

func TestVerifyExternalFingerprint(t *testing.T) {
	s := honestSegment(t)
	o := s.opts()
	o.Fingerprints = [][]byte{s.raws[0]}
	if r := Verify(s.raws[1:], o); !r.OK() {
		t.Fatalf("lease segment with its fingerprint in opts failed:\n%s", r)
	}
	o.Fingerprints = [][]byte{s.raws[1]}
	if r := Verify(s.raws[1:], o); !r.Failed(CheckSignature) || !r.Failed(CheckFingerprint) {
		t.Fatalf("a job entry passed as a fingerprint was accepted:\n%s", r)
	}
}

func TestVerifyCapsFindings(t *testing.T) {
	s := honestSegment(t)
	raws := make([][]byte, 200)
	for i := range raws {
		raws[i] = []byte{byte(i)}
	}
	r := Verify(append(raws, s.raws...), s.opts())
	n := 0
	for _, f := range r.Findings {
		if f.Check == CheckSignature {
			n++
		}
	}
	if n != maxFindingsPerCheck+1 || !strings.Contains(r.Findings[n-1].Message, "more failures not listed") {
		t.Errorf("%d signature findings, want %d with a summary", n, maxFindingsPerCheck+1)
	}
}

// TestSimCheats builds telemetry the way the simulator's cheating modes
// produce it and checks that each is caught by its named check.
func TestSimCheats(t *testing.T) {
	t.Run("honest", func(t *testing.T) {
		s := buildSegment(t, func(*simGPU) {})
		if r := Verify(s.raws, s.opts()); !r.OK() {
			t.Fatalf("honest sim failed:\n%s", r)
		}
	})
	t.Run("energy_factor", func(t *testing.T) {
		s := buildSegment(t, func(g *simGPU) { g.energyFactor = 1.5 })
		r := Verify(s.raws, s.opts())
		if !r.Failed(CheckEnergy) {
			t.Fatalf("EnergyFactor 1.5 not caught by %s:\n%s", CheckEnergy, r)
		}
	})
	t.Run("energy_factor_small", func(t *testing.T) {
		s := buildSegment(t, func(g *simGPU) { g.energyFactor = 0.7 })
		if r := Verify(s.raws, s.opts()); !r.Failed(CheckEnergy) {
			t.Fatalf("EnergyFactor 0.7 not caught:\n%s", r)
		}
	})
	t.Run("load_without_power", func(t *testing.T) {
		s := buildSegment(t, func(g *simGPU) { g.loadWithoutPower = true })
		r := Verify(s.raws, s.opts())
		if !r.Failed(CheckLoadPower) {
			t.Fatalf("LoadWithoutPower not caught by %s:\n%s", CheckLoadPower, r)
		}
		if r.Failed(CheckEnergy) {
			t.Errorf("energy is consistent with idle power, but %s failed:\n%s", CheckEnergy, r)
		}
	})
	t.Run("swapped_uuids_same_provider", func(t *testing.T) {
		// SwapUUIDs: after the swap the node's next fingerprint shows each
		// UUID on the other board (serial, bus).
		s := honestSegment(t)
		c, err := NewChain(s.key, &Head{V: 1, Provider: s.entries[0].Provider, Seq: s.entries[5].Seq,
			ID: RecordID(s.raws[5]).String(), AtMs: s.entries[5].AtMs, Fingerprint: RecordID(s.raws[0]).String()})
		if err != nil {
			t.Fatal(err)
		}
		fp := fingerprintOf(2)
		fp.GPUs[0].UUID, fp.GPUs[1].UUID = fp.GPUs[1].UUID, fp.GPUs[0].UUID
		raw, _, err := c.Append(s.entries[5].AtMs+1, fp)
		if err != nil {
			t.Fatal(err)
		}
		r := Verify(append(s.raws, raw), s.opts())
		if !r.Failed(CheckFingerprint) {
			t.Fatalf("swapped UUIDs not caught by %s:\n%s", CheckFingerprint, r)
		}
	})
	t.Run("spoofed_uuid_other_provider", func(t *testing.T) {
		// SpoofUUID: the device reports a UUID another provider owns.
		s := honestSegment(t)
		o := s.opts()
		o.KnownUUIDs = map[string]string{gpuUUID(0): peerOf(t, otherSeed)}
		if r := Verify(s.raws, o); !r.Failed(CheckUUIDClash) {
			t.Fatalf("spoofed UUID not caught by %s:\n%s", CheckUUIDClash, r)
		}
	})
}

// TestEnergyAtWindowEdges: a window of few readings (a lease shorter than
// the sampling interval: readings at its start and at its end) cannot see
// when the work drew power between them, so its energy may be up to the
// power limit over two intervals above what its readings average; energy
// no GPU could draw still fails. Windows of many readings are held to the
// tolerance (energy_inflated above).
func TestEnergyAtWindowEdges(t *testing.T) {
	readings := func(samples uint32, energyMs, drawnW uint64) func(es []*Entry) {
		return func(es []*Entry) {
			g := tel(es, 0)
			g.Samples = samples
			g.UtilMinBP, g.UtilAvgBP, g.UtilMaxBP = 500, 500, 500
			g.PowerAvgMW, g.PowerMaxMW = 70_000, 70_000
			if energyMs > 0 { // a lease this short has a window as short
				w := es[2].Telemetry
				w.EndMs = w.StartMs + int64(energyMs)
				for i := range w.GPUs {
					o := &w.GPUs[i]
					o.EnergyMs, o.EnergyMJ = energyMs, o.PowerAvgMW*energyMs/1000
				}
			}
			g.EnergyMJ = drawnW * g.EnergyMs // W x ms = mJ
		}
	}
	for _, c := range []struct {
		name     string
		samples  uint32
		energyMs uint64
		drawnW   uint64
		ok       bool
	}{
		{"work_between_readings", 2, 0, 600, true}, // an H100's limit is 700 W
		{"more_than_any_gpu_draws", 2, 0, 900, false},
		// Three readings within 1 ms (a WASM job's lease, CI stop 38): the
		// interval must not round down to no allowance, and readings
		// stamped in whole milliseconds may cover nearly 2 ms.
		{"three_readings_in_one_ms", 3, 1, 244, true},
		{"three_readings_in_one_ms_beyond_any_gpu", 3, 1, 2_200, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := honestSegment(t)
			raws := resealWith(readings(c.samples, c.energyMs, c.drawnW))(t, s, nil)
			r := Verify(raws, s.opts())
			if r.Failed(CheckEnergy) == c.ok {
				t.Fatalf("%d W over %d readings of 70 W: energy check passed=%v, want %v:\n%s", c.drawnW, c.samples, !r.Failed(CheckEnergy), c.ok, r)
			}
		})
	}
}

// TestEnergyOfBurstyLoad: a minute of 61 point readings of an H100 whose
// load jumps between idle and full (inference bursts) averages 350 W
// while the counter may honestly say much more or less, because each
// instantaneous reading catches one level or the other; the check allows
// the readings' sampling error, which such a window makes large. An
// inflated (2.2x) or frozen counter still fails, and a steady load gets a
// far smaller allowance.
func TestEnergyOfBurstyLoad(t *testing.T) {
	window := func(avgW, maxW uint64, counter float64) func(es []*Entry) {
		return func(es []*Entry) {
			g := tel(es, 0)
			g.Samples = 61
			g.UtilMinBP, g.UtilAvgBP, g.UtilMaxBP = 0, 4000, 10000
			g.PowerAvgMW, g.PowerMaxMW = avgW*1000, maxW*1000
			g.EnergyMJ = uint64(counter * float64(avgW*g.EnergyMs))
		}
	}
	for _, c := range []struct {
		name       string
		avgW, maxW uint64
		counter    float64 // the counter's energy over average power x time
		ok         bool
	}{
		{"bursty_counter_half_above_the_readings", 350, 700, 1.5, true},
		{"bursty_counter_two_fifths_below", 350, 700, 0.6, true},
		{"bursty_counter_inflated", 350, 700, 2.2, false},
		{"bursty_counter_frozen", 350, 700, 0, false},
		{"steady_counter_a_fifth_above", 600, 610, 1.2, true},
		{"steady_counter_half_above", 600, 610, 1.5, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := honestSegment(t)
			raws := resealWith(window(c.avgW, c.maxW, c.counter))(t, s, nil)
			r := Verify(raws, s.opts())
			if r.Failed(CheckEnergy) == c.ok {
				t.Fatalf("readings averaging %d W (max %d W), counter %.2fx: energy check passed=%v, want %v:\n%s",
					c.avgW, c.maxW, c.counter, !r.Failed(CheckEnergy), c.ok, r)
			}
		})
	}
}
