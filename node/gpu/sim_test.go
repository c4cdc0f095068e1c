package gpu

import (
	"context"
	"errors"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// fakeClock is a manual clock; tests move it, the sim reads it.
type fakeClock struct{ t time.Time }

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}
func (c *fakeClock) Now() time.Time          { return c.t }
func (c *fakeClock) Advance(d time.Duration) { c.t = c.t.Add(d) }

func newTestSim(t testing.TB, seed uint64, profiles ...string) (*Sim, *fakeClock) {
	t.Helper()
	clk := newFakeClock()
	s, err := NewSim(SimConfig{Profiles: profiles, Seed: seed, Clock: clk.Now}, nil)
	if err != nil {
		t.Fatalf("NewSim: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, clk
}

func mustSample(t testing.TB, s Backend) []Sample {
	t.Helper()
	out, err := s.Sample(context.Background())
	if err != nil {
		t.Fatalf("Sample: %v", err)
	}
	return out
}

func uuids(t testing.TB, b Backend) []string {
	t.Helper()
	devs, err := b.Devices()
	if err != nil {
		t.Fatalf("Devices: %v", err)
	}
	var out []string
	for _, d := range devs {
		out = append(out, d.UUID)
	}
	return out
}

// run samples every step for the duration and returns the samples of
// device idx, the first one taken at the start.
func run(t testing.TB, s *Sim, clk *fakeClock, idx int, dur, step time.Duration) []Sample {
	t.Helper()
	var out []Sample
	for el := time.Duration(0); el <= dur; el += step {
		if el > 0 {
			clk.Advance(step)
		}
		out = append(out, mustSample(t, s)[idx])
	}
	return out
}

func meanPowerW(ss []Sample) float64 {
	var sum float64
	for _, s := range ss {
		sum += s.PowerW
	}
	return sum / float64(len(ss))
}

// energyRatio is measured energy over mean power x elapsed time, the
// verifier's check.
func energyRatio(ss []Sample) float64 {
	first, last := ss[0], ss[len(ss)-1]
	dE := float64(last.EnergyMJ-first.EnergyMJ) / 1000 // J
	dt := last.Time.Sub(first.Time).Seconds()
	return dE / (meanPowerW(ss) * dt)
}

func TestSimDeterministic(t *testing.T) {
	script := func(seed uint64) ([]Device, [][]Sample) {
		s, clk := newTestSim(t, seed, "h100-sxm-80gb", "a10", "t4")
		devs, err := s.Devices()
		if err != nil {
			t.Fatal(err)
		}
		var all [][]Sample
		for i := range 20 {
			if i == 5 {
				if err := s.SetLoad(devs[1].UUID, "job-1", 70, 8000); err != nil {
					t.Fatal(err)
				}
			}
			clk.Advance(time.Second)
			all = append(all, mustSample(t, s))
		}
		return devs, all
	}
	d1, s1 := script(42)
	d2, s2 := script(42)
	if !reflect.DeepEqual(d1, d2) || !reflect.DeepEqual(s1, s2) {
		t.Fatal("same seed and calls gave different devices or samples")
	}
	d3, s3 := script(43)
	if d1[0].UUID == d3[0].UUID || reflect.DeepEqual(s1, s3) {
		t.Fatal("different seeds gave the same UUIDs or samples")
	}
}

func TestSimIdentityFormats(t *testing.T) {
	s, _ := newTestSim(t, 7, "h100-sxm-80gb", "h100-sxm-80gb", "h100-sxm-80gb", "h100-sxm-80gb",
		"h100-sxm-80gb", "h100-sxm-80gb", "h100-sxm-80gb", "h100-sxm-80gb", "t4")
	devs, err := s.Devices()
	if err != nil {
		t.Fatal(err)
	}
	uuidRE := regexp.MustCompile(`^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	busRE := regexp.MustCompile(`^[0-9A-F]{8}:[0-9A-F]{2}:[0-9A-F]{2}\.0$`)
	serialRE := regexp.MustCompile(`^[1-9][0-9]{12}$`)
	seenUUID, seenBus := map[string]bool{}, map[string]bool{}
	for i, d := range devs {
		if d.Index != i {
			t.Errorf("device %d has index %d", i, d.Index)
		}
		if !uuidRE.MatchString(d.UUID) || seenUUID[d.UUID] {
			t.Errorf("device %d: bad or duplicate UUID %q", i, d.UUID)
		}
		if !busRE.MatchString(d.PCIBusID) || seenBus[d.PCIBusID] {
			t.Errorf("device %d: bad or duplicate bus ID %q", i, d.PCIBusID)
		}
		if !serialRE.MatchString(d.Serial) {
			t.Errorf("device %d: bad serial %q", i, d.Serial)
		}
		seenUUID[d.UUID], seenBus[d.PCIBusID] = true, true
	}
	if devs[0].PCIBusID != "00000000:18:00.0" {
		t.Errorf("first bus ID = %q, want the DGX layout 00000000:18:00.0", devs[0].PCIBusID)
	}
}

func TestSimProfilesReportSpecs(t *testing.T) {
	for _, p := range KnownProfiles() {
		t.Run(p.Key, func(t *testing.T) {
			s, _ := newTestSim(t, 1, p.Key)
			devs, err := s.Devices()
			if err != nil {
				t.Fatal(err)
			}
			d := devs[0]
			if d.Name != p.Name || d.MemoryMiB != p.MemoryMiB || d.PowerLimitW != p.TDPW ||
				d.ComputeMajor != p.ComputeMajor || d.ComputeMinor != p.ComputeMinor ||
				d.PCIDeviceID != p.PCIDeviceID || d.MaxSMClockMHz != p.MaxSMClockMHz ||
				d.MaxMemClockMHz != p.MaxMemClockMHz || d.VBIOSVersion != p.VBIOS {
				t.Errorf("device %+v does not match profile %+v", d, p)
			}
			if (d.Serial != "") != p.Serial {
				t.Errorf("serial %q, profile says serial=%v", d.Serial, p.Serial)
			}
			wantMIG := MIGUnsupported
			if p.MIG {
				wantMIG = MIGDisabled
			}
			if d.MIG != wantMIG {
				t.Errorf("MIG = %v, want %v", d.MIG, wantMIG)
			}
			if d.DriverVersion != "550.54.15" || d.CUDAVersion != "12.4" {
				t.Errorf("driver %q cuda %q", d.DriverVersion, d.CUDAVersion)
			}
			if !(p.IdlePowerW < p.TDPW && p.SlowdownC > p.FullLoadC && p.ShutdownC > p.SlowdownC &&
				p.MaxOperatingC <= p.SlowdownC && p.IdleSMClockMHz < p.MaxSMClockMHz) {
				t.Errorf("profile %s is internally inconsistent", p.Key)
			}
		})
	}
}

func TestSimIdleIsNearIdlePower(t *testing.T) {
	for _, p := range KnownProfiles() {
		t.Run(p.Key, func(t *testing.T) {
			s, clk := newTestSim(t, 3, p.Key)
			for _, smp := range run(t, s, clk, 0, 60*time.Second, time.Second) {
				if smp.UtilizationPct != 0 {
					t.Fatalf("idle utilization %v", smp.UtilizationPct)
				}
				if math.Abs(smp.PowerW-p.IdlePowerW) > 0.05*p.TDPW {
					t.Fatalf("idle power %.1f W, want %.1f W within 5%% of TDP", smp.PowerW, p.IdlePowerW)
				}
				if smp.ThrottleReasons&ThrottleGPUIdle == 0 {
					t.Fatalf("idle throttle reasons %v lack gpu_idle", smp.ThrottleReasons)
				}
				if smp.SMClockMHz != p.IdleSMClockMHz || smp.MemoryUsedMiB != 0 || len(smp.Processes) != 0 {
					t.Fatalf("idle sample %+v", smp)
				}
			}
		})
	}
}

func TestSimEnergyMatchesPower(t *testing.T) {
	type tc struct {
		name    string
		profile string
		util    float64
		cheat   Cheat
		honest  bool
	}
	var cases []tc
	for _, p := range KnownProfiles() {
		for _, u := range []float64{0, 35, 80, 100} {
			cases = append(cases, tc{name: p.Key + "/util" + strconv.FormatFloat(u, 'f', -1, 64), profile: p.Key, util: u, honest: true})
		}
	}
	cases = append(cases,
		tc{name: "h100/energy-x1.5", profile: "h100-sxm-80gb", util: 80, cheat: Cheat{EnergyFactor: 1.5}},
		tc{name: "t4/energy-x0.7", profile: "t4", util: 50, cheat: Cheat{EnergyFactor: 0.7}},
		tc{name: "h100/energy-x1-is-honest", profile: "h100-sxm-80gb", util: 80, cheat: Cheat{EnergyFactor: 1}, honest: true},
		tc{name: "a100/load-without-power-stays-consistent", profile: "a100-sxm-80gb", util: 90, cheat: Cheat{LoadWithoutPower: true}, honest: true},
	)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, clk := newTestSim(t, 11, c.profile)
			uuid := uuids(t, s)[0]
			if err := s.SetCheat(uuid, c.cheat); err != nil {
				t.Fatal(err)
			}
			if err := s.SetLoad(uuid, "job", c.util, 1024); err != nil {
				t.Fatal(err)
			}
			ss := run(t, s, clk, 0, 120*time.Second, time.Second)
			ratio := energyRatio(ss)
			if c.honest && math.Abs(ratio-1) > 0.01 {
				t.Fatalf("energy / (mean power x dt) = %.4f, want 1 within 1%%", ratio)
			}
			if !c.honest && math.Abs(ratio-1) < 0.15 {
				t.Fatalf("cheating device passed the energy check: ratio %.4f", ratio)
			}
			// Per interval the energy delta is exactly the trapezoid of the two
			// power readings (up to mW and mJ rounding).
			for i := 1; i < len(ss) && c.honest; i++ {
				dE := float64(ss[i].EnergyMJ) - float64(ss[i-1].EnergyMJ)
				want := (ss[i].PowerW + ss[i-1].PowerW) / 2 * 1000 // 1 s
				if math.Abs(dE-want) > 3 {
					t.Fatalf("interval %d: energy delta %.0f mJ, trapezoid %.0f mJ", i, dE, want)
				}
			}
		})
	}
}

func TestSimPowerFollowsLoad(t *testing.T) {
	for _, p := range KnownProfiles() {
		t.Run(p.Key, func(t *testing.T) {
			s, clk := newTestSim(t, 5, p.Key)
			uuid := uuids(t, s)[0]
			prev := 0.0
			for _, u := range []float64{0, 25, 50, 75, 100} {
				if err := s.SetLoad(uuid, "job", u, 0); err != nil {
					t.Fatal(err)
				}
				ss := run(t, s, clk, 0, 30*time.Second, time.Second)[1:]
				mean := meanPowerW(ss)
				if mean <= prev {
					t.Fatalf("mean power %.1f W at %v%% not above %.1f W", mean, u, prev)
				}
				if math.Abs(ss[len(ss)-1].UtilizationPct-u) > 3 {
					t.Fatalf("reported utilization %v, load %v", ss[len(ss)-1].UtilizationPct, u)
				}
				prev = mean
				for _, smp := range ss {
					if smp.PowerW > p.TDPW {
						t.Fatalf("power %.1f W above the %v W limit", smp.PowerW, p.TDPW)
					}
				}
			}
			if prev < 0.97*p.TDPW {
				t.Fatalf("full load mean power %.1f W, want near TDP %v W", prev, p.TDPW)
			}
		})
	}
}

func TestSimTemperatureRisesAndDecays(t *testing.T) {
	for _, p := range KnownProfiles() {
		t.Run(p.Key, func(t *testing.T) {
			s, clk := newTestSim(t, 9, p.Key)
			uuid := uuids(t, s)[0]
			idle := mustSample(t, s)[0].TemperatureC
			if err := s.SetLoad(uuid, "job", 100, 0); err != nil {
				t.Fatal(err)
			}
			up := run(t, s, clk, 0, 300*time.Second, 10*time.Second)
			for i := 1; i < len(up); i++ {
				if up[i].TemperatureC < up[i-1].TemperatureC-0.3 {
					t.Fatalf("temperature fell under load: %.2f -> %.2f", up[i-1].TemperatureC, up[i].TemperatureC)
				}
			}
			hot := up[len(up)-1].TemperatureC
			if math.Abs(hot-p.FullLoadC) > 2 {
				t.Fatalf("after 10 time constants at full load: %.1f C, want ~%.0f C", hot, p.FullLoadC)
			}
			if up[3].TemperatureC < idle+0.5*(hot-idle) {
				t.Fatalf("temperature lags too much: %.1f C after 30 s (idle %.1f, hot %.1f)", up[3].TemperatureC, idle, hot)
			}
			if err := s.ClearLoad(uuid); err != nil {
				t.Fatal(err)
			}
			down := run(t, s, clk, 0, 300*time.Second, 10*time.Second)
			for i := 1; i < len(down); i++ {
				if down[i].TemperatureC > down[i-1].TemperatureC+0.3 {
					t.Fatalf("temperature rose at idle: %.2f -> %.2f", down[i-1].TemperatureC, down[i].TemperatureC)
				}
			}
			if cool := down[len(down)-1].TemperatureC; math.Abs(cool-idle) > 1 {
				t.Fatalf("temperature after cooling %.1f C, idle was %.1f C", cool, idle)
			}
		})
	}
}

func TestSimThermalThrottleWithBadCooling(t *testing.T) {
	s, clk := newTestSim(t, 2, "l40s")
	p, _ := LookupProfile("l40s")
	uuid := uuids(t, s)[0]
	if err := s.SetLoad(uuid, "job", 100, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.SetCoolingFactor(uuid, 1.5); err != nil {
		t.Fatal(err)
	}
	last := run(t, s, clk, 0, 600*time.Second, 10*time.Second)
	smp := last[len(last)-1]
	if smp.TemperatureC < p.MaxOperatingC || smp.ThrottleReasons&ThrottleSWThermal == 0 {
		t.Fatalf("expected thermal slowdown, got %.1f C reasons %v", smp.TemperatureC, smp.ThrottleReasons)
	}
	if smp.SMClockMHz >= p.MaxSMClockMHz {
		t.Fatalf("SM clock %d MHz not reduced under thermal slowdown", smp.SMClockMHz)
	}
	if err := s.SetCoolingFactor(uuid, 0); err == nil {
		t.Fatal("cooling factor 0 accepted")
	}
}

func TestSimLoadWithoutPower(t *testing.T) {
	s, clk := newTestSim(t, 4, "h100-sxm-80gb")
	p, _ := LookupProfile("h100-sxm-80gb")
	uuid := uuids(t, s)[0]
	if err := s.SetCheat(uuid, Cheat{LoadWithoutPower: true}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetLoad(uuid, "job", 90, 40000); err != nil {
		t.Fatal(err)
	}
	ss := run(t, s, clk, 0, 60*time.Second, time.Second)[1:]
	last := ss[len(ss)-1]
	if last.UtilizationPct < 85 || last.MemoryUsedMiB != 40000 || len(last.Processes) != 1 {
		t.Fatalf("cheater should still report the load: %+v", last)
	}
	if mean := meanPowerW(ss); math.Abs(mean-p.IdlePowerW) > 0.05*p.TDPW {
		t.Fatalf("cheater power %.1f W, want idle %.1f W", mean, p.IdlePowerW)
	}
}

func TestSimProcesses(t *testing.T) {
	s, clk := newTestSim(t, 1, "a10")
	uuid := uuids(t, s)[0]
	if err := s.SetLoad(uuid, "job-abc", 60, 12000); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	a := mustSample(t, s)[0]
	if err := s.SetLoad(uuid, "job-abc", 90, 13000); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	b := mustSample(t, s)[0]
	if len(a.Processes) != 1 || len(b.Processes) != 1 || a.Processes[0].PID != b.Processes[0].PID || a.Processes[0].PID < 1000 {
		t.Fatalf("processes %+v then %+v: want one stable PID", a.Processes, b.Processes)
	}
	if b.Processes[0].UsedMemoryMiB != 13000 || b.MemoryUsedMiB != 13000 {
		t.Fatalf("memory %+v", b)
	}
	if err := s.ClearLoad(uuid); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	if c := mustSample(t, s)[0]; len(c.Processes) != 0 || c.MemoryUsedMiB != 0 || c.UtilizationPct != 0 {
		t.Fatalf("after ClearLoad: %+v", c)
	}
}

func TestSimSampleAtSameInstantIsStable(t *testing.T) {
	s, _ := newTestSim(t, 1, "h100-sxm-80gb")
	if err := s.SetLoad(uuids(t, s)[0], "j", 50, 0); err != nil {
		t.Fatal(err)
	}
	a, b := mustSample(t, s), mustSample(t, s)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("two samples at one instant differ:\n%+v\n%+v", a, b)
	}
}

func TestSimSampleHonoursContext(t *testing.T) {
	s, _ := newTestSim(t, 1, "t4")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Sample(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sample with cancelled ctx: %v", err)
	}
}

func BenchmarkSimSample8(b *testing.B) {
	clk := newFakeClock()
	profiles := make([]string, 8)
	for i := range profiles {
		profiles[i] = "h100-sxm-80gb"
	}
	s, err := NewSim(SimConfig{Profiles: profiles, Seed: 1, Clock: clk.Now}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	devs, _ := s.Devices()
	for i, d := range devs {
		if err := s.SetLoad(d.UUID, "job", float64(10*i), 1024); err != nil {
			b.Fatal(err)
		}
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		clk.Advance(time.Second)
		if _, err := s.Sample(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
