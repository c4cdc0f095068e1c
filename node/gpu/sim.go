package gpu

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"
)

// Sim is a backend of simulated GPUs. Everything it reports follows from
// the seed, the clock and the calls made on it, so tests are reproducible:
// two Sims with the same config and the same call sequence report the same
// numbers. It is safe for concurrent use.
//
// Devices are addressed by their real UUID (the one Devices reports when no
// cheat is set); a spoofed UUID also works when no real one matches.
type Sim struct {
	log   *slog.Logger
	clock func() time.Time

	mu      sync.Mutex
	gpus    []*simGPU
	subs    map[int]chan Event
	nextSub int
	dropped uint64 // events dropped because a subscriber was not reading
	closed  bool
	done    chan struct{}
	wg      sync.WaitGroup
}

var _ Backend = (*Sim)(nil)

// eventBuffer bounds each subscriber's backlog; a subscriber that falls
// further behind loses events rather than stalling the injector.
const eventBuffer = 64

// NewSim builds simulated GPUs from cfg.Profiles. A nil logger discards logs.
func NewSim(cfg SimConfig, logger *slog.Logger) (*Sim, error) {
	if len(cfg.Profiles) == 0 {
		return nil, errors.New("gpu: sim: no profiles configured (want e.g. [\"h100-sxm-80gb\"])")
	}
	clock := cfg.Clock
	if clock == nil {
		clock = time.Now
	}
	driver := cfg.DriverVersion
	if driver == "" {
		driver = "550.54.15"
	}
	cuda := cfg.CUDAVersion
	if cuda == "" {
		cuda = "12.4"
	}
	s := &Sim{
		log:   orDiscard(logger),
		clock: clock,
		subs:  make(map[int]chan Event),
		done:  make(chan struct{}),
	}
	now := clock()
	for i, key := range cfg.Profiles {
		p, ok := LookupProfile(key)
		if !ok {
			return nil, fmt.Errorf("gpu: sim: unknown profile %q at index %d (known: %v)", key, i, ProfileKeys())
		}
		id := simIdentity(cfg.Seed, i)
		dev := Device{
			Index:          i,
			UUID:           id.uuid,
			Name:           p.Name,
			MemoryMiB:      p.MemoryMiB,
			ComputeMajor:   p.ComputeMajor,
			ComputeMinor:   p.ComputeMinor,
			PCIBusID:       simBusID(i),
			PCIDeviceID:    p.PCIDeviceID,
			VBIOSVersion:   p.VBIOS,
			DriverVersion:  driver,
			CUDAVersion:    cuda,
			PowerLimitW:    p.TDPW,
			MaxSMClockMHz:  p.MaxSMClockMHz,
			MaxMemClockMHz: p.MaxMemClockMHz,
			MIG:            MIGUnsupported,
		}
		if p.Serial {
			dev.Serial = id.serial
		}
		if p.MIG {
			dev.MIG = MIGDisabled
		}
		// One stream per device, so load on one GPU does not change the
		// noise another GPU sees.
		rng := rand.New(rand.NewPCG(cfg.Seed, uint64(i)+0x9e3779b97f4a7c15))
		s.gpus = append(s.gpus, newSimGPU(p, dev, rng, now))
	}
	s.log.Info("gpu: sim backend ready", "gpus", len(s.gpus), "seed", cfg.Seed)
	return s, nil
}

type simID struct {
	uuid   string
	serial string
}

// simIdentity derives a UUID and a 13-digit serial from seed and index, in
// the formats NVML uses, so fingerprints look real and are reproducible.
func simIdentity(seed uint64, index int) simID {
	var in [24]byte
	copy(in[:8], "idlegrid")
	binary.BigEndian.PutUint64(in[8:], seed)
	binary.BigEndian.PutUint64(in[16:], uint64(index))
	h := sha256.Sum256(in[:])
	uuid := fmt.Sprintf("GPU-%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
	serial := fmt.Sprintf("%013d", 1_000_000_000_000+binary.BigEndian.Uint64(h[16:24])%9_000_000_000_000)
	return simID{uuid: uuid, serial: serial}
}

// dgxBusNumbers are the PCI buses of the eight GPUs in a DGX H100, so the
// first eight simulated GPUs get bus IDs a real 8-GPU box would show.
var dgxBusNumbers = []int{0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB}

func simBusID(index int) string {
	bus := 0xE0 + index // beyond eight GPUs: still unique and well formed
	if index < len(dgxBusNumbers) {
		bus = dgxBusNumbers[index]
	}
	return fmt.Sprintf("%08X:%02X:%02X.0", index/0x100, bus%0x100, 0)
}

func (s *Sim) Name() string { return BackendSim }

// Devices returns the static facts of every simulated GPU. A lost GPU is
// reported as a *DeviceError wrapping ErrGPULost, as NVML would.
func (s *Sim) Devices() ([]Device, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("gpu: sim devices: %w", ErrClosed)
	}
	out := make([]Device, 0, len(s.gpus))
	var errs []error
	for _, g := range s.gpus {
		if g.lost {
			errs = append(errs, &DeviceError{Index: g.dev.Index, UUID: g.reportedUUID(), Op: "sim devices", Err: ErrGPULost})
			continue
		}
		d := g.dev
		d.UUID = g.reportedUUID()
		out = append(out, d)
	}
	return out, errors.Join(errs...)
}

// Sample advances every device to the clock's now and reads it.
func (s *Sim) Sample(ctx context.Context) ([]Sample, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("gpu: sim sample: %w", ErrClosed)
	}
	now := s.clock()
	out := make([]Sample, 0, len(s.gpus))
	var errs []error
	for _, g := range s.gpus {
		if g.lost {
			errs = append(errs, &DeviceError{Index: g.dev.Index, UUID: g.reportedUUID(), Op: "sim sample", Err: ErrGPULost})
			continue
		}
		g.advance(now)
		out = append(out, g.sample(now))
	}
	return out, errors.Join(errs...)
}

// Events subscribes to injected XIDs. The channel closes when ctx is done or
// the Sim is closed.
func (s *Sim) Events(ctx context.Context) (<-chan Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("gpu: sim events: %w", ErrClosed)
	}
	id := s.nextSub
	s.nextSub++
	ch := make(chan Event, eventBuffer)
	s.subs[id] = ch
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		select {
		case <-ctx.Done():
		case <-s.done:
		}
		s.mu.Lock()
		delete(s.subs, id)
		close(ch) // under mu, so no emit can race with the close
		s.mu.Unlock()
	}()
	return ch, nil
}

// emit sends ev to every subscriber without blocking. Callers hold s.mu.
func (s *Sim) emit(ev Event) {
	for _, ch := range s.subs {
		select {
		case ch <- ev:
		default:
			s.dropped++
			s.log.Warn("gpu: sim event dropped, subscriber not reading", "uuid", ev.UUID, "xid", ev.XID, "dropped", s.dropped)
		}
	}
}

// Close stops event subscriptions and waits for their goroutines.
func (s *Sim) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.done)
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

// lookup finds a device by real UUID first, then by reported UUID, so a
// swapped pair stays addressable. Callers hold s.mu.
func (s *Sim) lookup(op, uuid string) (*simGPU, error) {
	if s.closed {
		return nil, fmt.Errorf("gpu: sim %s(%s): %w", op, uuid, ErrClosed)
	}
	for _, g := range s.gpus {
		if g.dev.UUID == uuid {
			return g, nil
		}
	}
	for _, g := range s.gpus {
		if g.reportedUUID() == uuid {
			return g, nil
		}
	}
	return nil, fmt.Errorf("gpu: sim %s(%s): %w", op, uuid, ErrUnknownDevice)
}
