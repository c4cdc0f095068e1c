package attest

import (
	"fmt"
	"math"
	"slices"
)

// hardwareXIDs are the XIDs that mean failing hardware rather than a bad
// application (NVIDIA's XID catalogue; node/gpu.IsApplicationXID lists the
// application ones): 48 double-bit ECC, 63/64 row remapping, 74 NVLink,
// 79 fallen off the bus, 94/95 contained/uncontained ECC.
var hardwareXIDs = []uint64{48, 63, 64, 74, 79, 94, 95}

// IsHardwareXID reports whether the XID code indicates a hardware fault.
func IsHardwareXID(code uint64) bool { return slices.Contains(hardwareXIDs, code) }

// Bounds beyond which a measured value is absurd, so the energy arithmetic
// below stays inside uint64: 100 kW per GPU, 100 GJ per window.
const (
	absurdPowerMW  = 100_000_000
	absurdEnergyMJ = 100_000_000_000_000
)

func (v *verifier) checkRanges(o *opened, t *Telemetry, g *GPUTelemetry) {
	if !(g.UtilMinBP <= g.UtilAvgBP && g.UtilAvgBP <= g.UtilMaxBP && g.UtilMaxBP <= 10000) {
		v.failAt(o, "GPU %s: utilization min/avg/max %s/%s/%s is not ordered within 0..100%%",
			g.UUID, pct(g.UtilMinBP), pct(g.UtilAvgBP), pct(g.UtilMaxBP))
	}
	if g.PowerAvgMW > g.PowerMaxMW {
		v.failAt(o, "GPU %s: average power %d mW exceeds its maximum %d mW", g.UUID, g.PowerAvgMW, g.PowerMaxMW)
	}
	if g.TempMaxC > v.opts.MaxTempC {
		v.failAt(o, "GPU %s: temperature %d C exceeds the plausible %d C", g.UUID, g.TempMaxC, v.opts.MaxTempC)
	}
	f, ok := v.fact(t, g.UUID)
	if !ok {
		return // the fingerprint check reports it
	}
	if limit := f.PowerLimitMW; g.PowerMaxMW > absurdPowerMW || g.PowerMaxMW*100 > limit*105 {
		v.failAt(o, "GPU %s: power %d mW exceeds 1.05 x the %d mW limit", g.UUID, g.PowerMaxMW, limit)
	}
	if g.MemUsedMaxMiB > f.MemoryMiB {
		v.failAt(o, "GPU %s: memory used %d MiB exceeds the %d MiB total", g.UUID, g.MemUsedMaxMiB, f.MemoryMiB)
	}
}

// checkEnergy compares the energy counter's delta with average power times
// the time the delta covers. Energy comes from the driver's own integral,
// power from point samples, so honest windows agree within a few percent;
// an inflated or frozen counter does not.
func (v *verifier) checkEnergy(o *opened, t *Telemetry, g *GPUTelemetry) {
	window := uint64(t.EndMs - t.StartMs)
	switch {
	case g.EnergyMs > window:
		v.failAt(o, "GPU %s: energy covers %d ms, longer than the %d ms window", g.UUID, g.EnergyMs, window)
		return
	case window >= 10_000 && g.EnergyMs*2 < window:
		v.failAt(o, "GPU %s: energy covers only %d ms of the %d ms window", g.UUID, g.EnergyMs, window)
		return
	case g.EnergyMs == 0 || g.PowerAvgMW > absurdPowerMW:
		return // nothing to compare; ranges reports absurd power
	case g.EnergyMJ > absurdEnergyMJ:
		v.failAt(o, "GPU %s: energy %d mJ in %d ms is absurd", g.UUID, g.EnergyMJ, g.EnergyMs)
		return
	}
	// All in micro-joules (mW x ms): expected <= 6e13, got <= 1e17,
	// slack <= 1e17 (windows are at most MaxWindowMs).
	expected := g.PowerAvgMW * g.EnergyMs
	got := g.EnergyMJ * 1000
	diff := max(got, expected) - min(got, expected)
	tol := uint64(v.opts.EnergyTolerancePct)
	if slack := v.edgeEnergy(t, g) + samplingNoise(g)*g.EnergyMs; diff > slack && (diff-slack)*100 > tol*expected {
		dev := "inf"
		if expected > 0 {
			dev = signedPct(got, expected)
		}
		v.failAt(o, "GPU %s: energy %d mJ over %d ms is %s off average power %d mW x time = %d mJ (tolerance %d%%)",
			g.UUID, g.EnergyMJ, g.EnergyMs, dev, g.PowerAvgMW, expected/1000, tol)
	}
}

// edgeEnergy is what point readings cannot see, in micro-joules: a step
// in load between two readings, at the power limit, for one mean sampling
// interval at each end of the window, plus one millisecond because
// readings are stamped in whole milliseconds (the energy of readings
// stamped 1 ms apart may cover nearly 2 ms). Windows start and end where
// leases do (the provider reads its GPUs at both events), so the work
// starts or stops between readings there. In a 60-reading window this is
// a few percent of the energy; in a window of a few readings, a lease
// shorter than the sampling interval, it leaves only energy no GPU could
// draw to fail. The interval rounds up: several readings within a
// millisecond must not round the allowance down to nothing.
func (v *verifier) edgeEnergy(t *Telemetry, g *GPUTelemetry) uint64 {
	f, ok := v.fact(t, g.UUID)
	if !ok || g.Samples < 2 || f.PowerLimitMW > absurdPowerMW {
		return 0
	}
	gaps := uint64(g.Samples - 1)
	twoIntervals := (2*g.EnergyMs + gaps - 1) / gaps
	return f.PowerLimitMW * (min(g.EnergyMs, twoIntervals) + 1)
}

// samplingNoiseSigmas is how many standard errors of the mean reading
// samplingNoise allows: an honest window must not fail but once in
// millions.
const samplingNoiseSigmas = 5

// samplingNoise bounds, in mW, how far the average of the window's point
// readings of power may honestly stray from its true average, which the
// energy counter integrates. Power that jumps between idle and load
// (inference serving bursts, data loading between steps) is read at
// whichever level a reading happens to catch: NVML returns instantaneous
// power on GA100 and older GPUs (A100, V100, T4), an average over a
// second only on later ones. Readings between 0 and the window's maximum
// M with mean mu vary by at most sqrt((M-mu)*mu) (Bhatia-Davis), so their
// mean strays by that over sqrt(n). A steady load (mu near M) gets almost
// nothing; a load half on, half off gets the most. An inflated or frozen
// counter is still caught: 2x or 0 is far outside this on a window of
// many readings.
func samplingNoise(g *GPUTelemetry) uint64 {
	mu, m := float64(g.PowerAvgMW), float64(g.PowerMaxMW)
	if g.Samples < 2 || m <= mu || m > absurdPowerMW {
		return 0
	}
	return uint64(samplingNoiseSigmas * math.Sqrt((m-mu)*mu/float64(g.Samples)))
}

func (v *verifier) checkLoadPower(o *opened, t *Telemetry, g *GPUTelemetry) {
	f, ok := v.fact(t, g.UUID)
	if !ok || g.UtilAvgBP < v.opts.LoadUtilBP {
		return
	}
	if g.PowerAvgMW <= absurdPowerMW && g.PowerAvgMW*100 < f.PowerLimitMW*uint64(v.opts.LoadPowerMinPct) {
		v.failAt(o, "GPU %s: utilization %s but average power %d mW is under %d%% of its %d mW limit (load without power)",
			g.UUID, pct(g.UtilAvgBP), g.PowerAvgMW, v.opts.LoadPowerMinPct, f.PowerLimitMW)
	}
}

func (v *verifier) checkHealth(o *opened, _ *Telemetry, g *GPUTelemetry) {
	for _, x := range g.XIDs {
		if IsHardwareXID(x.Code) {
			v.failAt(o, "GPU %s: hardware XID %d at %d", g.UUID, x.Code, x.AtMs)
		}
	}
	if g.ECCUncorrected > 0 {
		v.failAt(o, "GPU %s: %d uncorrectable ECC errors", g.UUID, g.ECCUncorrected)
	}
}

// pct formats basis points as a percentage with two decimals.
func pct(bp uint32) string {
	return fmt.Sprintf("%d.%02d%%", bp/100, bp%100)
}

// signedPct formats (got-want)/want as a signed whole percentage; want > 0
// and both are below 2^57, so nothing overflows.
func signedPct(got, want uint64) string {
	if got >= want {
		return fmt.Sprintf("+%d%%", (got-want)*100/want)
	}
	return fmt.Sprintf("-%d%%", (want-got)*100/want)
}
