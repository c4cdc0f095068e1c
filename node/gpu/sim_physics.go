package gpu

import (
	"math"
	"math/rand/v2"
	"time"
)

// Model constants. They shape the curves; the per-model numbers live in the
// profiles.
const (
	// simAmbientC is the temperature an idle board settles toward with no
	// power at all (inlet air plus board offset).
	simAmbientC = 30.0
	// simThermalTauS is the first-order thermal time constant of die plus
	// heatsink; measured GPUs settle within a few minutes of a load step.
	simThermalTauS = 30.0
	// simPowerExponent is k in power = idle + (limit-idle)*util^k: slightly
	// convex, because low-utilization work rarely lights up every unit.
	simPowerExponent = 1.2
	// simPowerNoiseFrac is the standard deviation of power noise as a
	// fraction of TDP (about 3 W on an H100), like NVML's 1 s average.
	simPowerNoiseFrac = 0.004
	// simUtilNoisePct is the standard deviation of reported utilization.
	simUtilNoisePct = 0.7
)

// simGPU is the state of one simulated device.
type simGPU struct {
	prof Profile
	dev  Device
	rng  *rand.Rand
	last time.Time // time of the last advance

	// load, set by SetLoad
	util   float64 // 0..1
	memMiB uint64
	jobID  string
	pid    uint32

	// physical state; energy is float so sub-mJ increments are not lost
	powerW     float64
	capped     bool // the last power draw hit the limit
	tempC      float64
	energyMJ   float64
	reportUtil float64
	cooling    float64 // multiplies thermal resistance; 1 is nominal

	eccCorrected   uint64
	eccUncorrected uint64
	lost           bool
	cheat          Cheat
}

func newSimGPU(p Profile, dev Device, rng *rand.Rand, now time.Time) *simGPU {
	g := &simGPU{prof: p, dev: dev, rng: rng, last: now, cooling: 1}
	// A counter that starts at zero would look like a freshly loaded driver
	// on every run; start somewhere plausible instead.
	g.energyMJ = float64(rng.Uint64N(1_000_000_000))
	g.powerW = g.drawPower()
	g.tempC = g.equilibriumC(g.powerW)
	return g
}

func (g *simGPU) reportedUUID() string {
	if g.cheat.SpoofUUID != "" {
		return g.cheat.SpoofUUID
	}
	return g.dev.UUID
}

// drawPower returns a fresh noisy power reading for the current load.
func (g *simGPU) drawPower() float64 {
	u := g.util
	if g.cheat.LoadWithoutPower {
		u = 0
	}
	p := g.prof
	w := p.IdlePowerW + (p.TDPW-p.IdlePowerW)*math.Pow(u, simPowerExponent) +
		g.rng.NormFloat64()*simPowerNoiseFrac*p.TDPW
	g.capped = false
	if w >= p.TDPW {
		// The power controller holds the board at its limit.
		w = p.TDPW
		g.capped = true
	}
	if floor := 0.8 * p.IdlePowerW; w < floor {
		w = floor
	}
	return w
}

// equilibriumC is where the temperature settles at a constant power.
func (g *simGPU) equilibriumC(powerW float64) float64 {
	rise := (g.prof.FullLoadC - simAmbientC) * powerW / g.prof.TDPW
	return simAmbientC + g.cooling*rise
}

// advance moves the device state from g.last to now. Energy integrates power
// with the trapezoid rule between the previous and the new reading, so the
// energy delta between two samples equals their mean power times the
// elapsed time; temperature relaxes toward the equilibrium of that mean
// power. A clock that did not move (or went back) changes nothing.
func (g *simGPU) advance(now time.Time) {
	dt := now.Sub(g.last).Seconds()
	if dt <= 0 {
		return
	}
	prev := g.powerW
	next := g.drawPower()
	mean := (prev + next) / 2

	factor := 1.0
	if f := g.cheat.EnergyFactor; f > 0 {
		factor = f
	}
	g.energyMJ += mean * dt * 1000 * factor

	eq := g.equilibriumC(mean)
	g.tempC = eq + (g.tempC-eq)*math.Exp(-dt/simThermalTauS)

	g.powerW = next
	g.reportUtil = g.drawUtil()
	g.last = now
}

// resetPower redraws the instantaneous power after a load change, without
// integrating, so the next interval sees the new load at both ends.
func (g *simGPU) resetPower() {
	g.powerW = g.drawPower()
	g.reportUtil = g.drawUtil()
}

func (g *simGPU) drawUtil() float64 {
	if g.util == 0 {
		return 0
	}
	u := g.util*100 + g.rng.NormFloat64()*simUtilNoisePct
	// NVML reports whole percent.
	return math.Round(min(100, max(1, u)))
}

func (g *simGPU) throttle() ThrottleReasons {
	var r ThrottleReasons
	if g.util == 0 {
		r |= ThrottleGPUIdle
	}
	if g.capped {
		r |= ThrottleSWPowerCap
	}
	if g.tempC >= g.prof.MaxOperatingC {
		r |= ThrottleSWThermal
	}
	if g.tempC >= g.prof.SlowdownC {
		r |= ThrottleHWSlowdown | ThrottleHWThermal
	}
	return r
}

func (g *simGPU) clocks(r ThrottleReasons) (smMHz, memMHz uint32) {
	p := g.prof
	if g.util == 0 {
		return p.IdleSMClockMHz, p.IdleMemClockMHz
	}
	sm := float64(p.MaxSMClockMHz)
	if r&ThrottleSWPowerCap != 0 {
		sm *= 0.97
	}
	if r&(ThrottleSWThermal|ThrottleHWThermal) != 0 {
		sm *= 0.85
	}
	// Clocks move in 15 MHz steps on recent NVIDIA parts.
	return uint32(math.Round(sm/15) * 15), p.MaxMemClockMHz
}

// sample reads the current state. It draws no random numbers, so reading
// twice at the same instant gives the same sample.
func (g *simGPU) sample(now time.Time) Sample {
	r := g.throttle()
	sm, mem := g.clocks(r)
	s := Sample{
		Time:            now,
		Index:           g.dev.Index,
		UUID:            g.reportedUUID(),
		UtilizationPct:  g.reportUtil,
		MemoryUsedMiB:   g.memMiB,
		MemoryTotalMiB:  g.prof.MemoryMiB,
		TemperatureC:    g.tempC,
		PowerW:          math.Round(g.powerW*1000) / 1000, // NVML reports mW
		EnergyMJ:        uint64(g.energyMJ),
		SMClockMHz:      sm,
		MemClockMHz:     mem,
		ThrottleReasons: r,
	}
	if g.prof.ECC {
		s.ECCCorrected = g.eccCorrected
		s.ECCUncorrected = g.eccUncorrected
	} else {
		s.Absent |= MetricECC
	}
	if g.jobID != "" {
		s.Processes = []Process{{PID: g.pid, UsedMemoryMiB: g.memMiB}}
	}
	return s
}
