package gpu

import (
	"fmt"
	"hash/fnv"
	"math"
)

// Cheat makes a simulated device lie, so verifier tests have something to
// catch. The zero value is an honest device.
type Cheat struct {
	// LoadWithoutPower reports utilization, memory and processes for the
	// load but keeps power (and so energy and temperature) at idle.
	LoadWithoutPower bool
	// EnergyFactor scales the energy counter's increments; 0 and 1 are
	// honest, 1.5 inflates energy by half relative to power x time.
	EnergyFactor float64
	// SpoofUUID, when set, replaces the device's UUID in Devices, samples
	// and events: a cloned or swapped UUID.
	SpoofUUID string
}

// SetLoad places a job's load on a device: utilPct (0-100) of GPU time and
// memMiB of framebuffer. It replaces any earlier load; the executor calls it
// when a job starts or its demand changes.
func (s *Sim) SetLoad(uuid, jobID string, utilPct float64, memMiB uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, err := s.lookup("SetLoad", uuid)
	if err != nil {
		return err
	}
	if g.lost {
		return fmt.Errorf("gpu: sim SetLoad(%s): %w", uuid, ErrGPULost)
	}
	if math.IsNaN(utilPct) || utilPct < 0 || utilPct > 100 {
		return fmt.Errorf("gpu: sim SetLoad(%s): utilization %v%% outside 0-100", uuid, utilPct)
	}
	if memMiB > g.prof.MemoryMiB {
		return fmt.Errorf("gpu: sim SetLoad(%s): %d MiB exceeds the device's %d MiB", uuid, memMiB, g.prof.MemoryMiB)
	}
	// Settle the interval under the old load before switching.
	g.advance(s.clock())
	g.util = utilPct / 100
	g.memMiB = memMiB
	g.jobID = jobID
	g.pid = simPID(jobID)
	g.resetPower()
	return nil
}

// ClearLoad removes the load from a device; it goes back to idle.
func (s *Sim) ClearLoad(uuid string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, err := s.lookup("ClearLoad", uuid)
	if err != nil {
		return err
	}
	if g.lost {
		return fmt.Errorf("gpu: sim ClearLoad(%s): %w", uuid, ErrGPULost)
	}
	g.advance(s.clock())
	g.util, g.memMiB, g.jobID, g.pid = 0, 0, "", 0
	g.resetPower()
	return nil
}

// simPID derives a stable Linux-range PID from a job ID, so the process list
// of a sample names the same PID for the whole job.
func simPID(jobID string) uint32 {
	if jobID == "" {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(jobID))
	const pidMax = 4_194_304 // Linux pid_max on 64-bit
	return 1000 + h.Sum32()%(pidMax-1000)
}

// InjectXID delivers an XID event for the device to every subscriber.
func (s *Sim) InjectXID(uuid string, code uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, err := s.lookup("InjectXID", uuid)
	if err != nil {
		return err
	}
	s.emit(Event{Time: s.clock(), UUID: g.reportedUUID(), XID: code})
	return nil
}

// FailGPU makes the device fall off the bus: it emits XID 79, and from then
// on Devices and Sample report it as a *DeviceError wrapping ErrGPULost.
func (s *Sim) FailGPU(uuid string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, err := s.lookup("FailGPU", uuid)
	if err != nil {
		return err
	}
	if g.lost {
		return nil
	}
	g.lost = true
	s.emit(Event{Time: s.clock(), UUID: g.reportedUUID(), XID: 79})
	s.log.Warn("gpu: sim gpu lost", "uuid", g.reportedUUID())
	return nil
}

// InjectECC counts one ECC error on the device. An uncorrected error also
// emits XID 48 (double-bit ECC error), as the driver does.
func (s *Sim) InjectECC(uuid string, uncorrected bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, err := s.lookup("InjectECC", uuid)
	if err != nil {
		return err
	}
	if !g.prof.ECC {
		return fmt.Errorf("gpu: sim InjectECC(%s): %s reports no ECC", uuid, g.prof.Name)
	}
	if uncorrected {
		g.eccUncorrected++
		s.emit(Event{Time: s.clock(), UUID: g.reportedUUID(), XID: 48})
	} else {
		g.eccCorrected++
	}
	return nil
}

// SetCheat sets how the device lies; Cheat{} makes it honest again.
func (s *Sim) SetCheat(uuid string, c Cheat) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, err := s.lookup("SetCheat", uuid)
	if err != nil {
		return err
	}
	if c.EnergyFactor < 0 || math.IsNaN(c.EnergyFactor) {
		return fmt.Errorf("gpu: sim SetCheat(%s): energy factor %v must be >= 0", uuid, c.EnergyFactor)
	}
	g.advance(s.clock())
	g.cheat = c
	g.resetPower()
	return nil
}

// SwapUUIDs makes devices a and b report each other's UUID (keeping any
// other cheat they have).
func (s *Sim) SwapUUIDs(a, b string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ga, err := s.lookup("SwapUUIDs", a)
	if err != nil {
		return err
	}
	gb, err := s.lookup("SwapUUIDs", b)
	if err != nil {
		return err
	}
	ga.cheat.SpoofUUID, gb.cheat.SpoofUUID = gb.dev.UUID, ga.dev.UUID
	return nil
}

// SetCoolingFactor scales the device's thermal resistance: 1 is nominal,
// 2 is a failed fan or blocked airflow. Use it to drive thermal throttling.
func (s *Sim) SetCoolingFactor(uuid string, factor float64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, err := s.lookup("SetCoolingFactor", uuid)
	if err != nil {
		return err
	}
	if !(factor > 0) || math.IsInf(factor, 0) {
		return fmt.Errorf("gpu: sim SetCoolingFactor(%s): factor %v must be > 0", uuid, factor)
	}
	g.advance(s.clock())
	g.cooling = factor
	return nil
}
