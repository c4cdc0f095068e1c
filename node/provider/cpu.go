package provider

import (
	"log/slog"
	"math"
	"sync"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/gpu"
	"github.com/idlegrid/idlegrid/store"
)

// cpuPool is the share of the host's cores and RAM offered to CPU-only
// work (gpus: 0 jobs), and the leases holding parts of it. A CPU-only
// lease holds cores and RAM here, never a GPU, so it runs beside GPU work
// and on a host whose GPUs are all leased.
type cpuPool struct {
	cores      uint32
	ramMiB     uint64
	floorMicro uint64

	mu     sync.Mutex
	leases map[string]cpuUse // lease ID -> what it holds
}

// cpuShare is the share of the host offered to CPU-only work: the
// configured one on a host without GPUs, or with provider.cpu_beside_gpus
// set; none on a host with GPUs otherwise (OfferConfig.CPUBesideGPUs says
// why). A host counts as having GPUs when its backend reports any at
// start, even if it could not read them all.
func cpuShare(offer OfferConfig, gpus gpu.Backend, log *slog.Logger) float64 {
	if offer.CPUShare <= 0 || offer.CPUBesideGPUs {
		return offer.CPUShare
	}
	devs, _ := gpus.Devices()
	if len(devs) == 0 {
		return offer.CPUShare
	}
	log.Info("no CPU share offered for CPU-only jobs on a host with GPUs; set provider.cpu_beside_gpus = true to offer it",
		"gpus", len(devs), "cpu_share", offer.CPUShare)
	return 0
}

// cpuUse is what one CPU-only lease holds.
type cpuUse struct {
	cores  uint32
	ramMiB uint64
}

// newCPUPool offers share (0..1) of host's cores (at least one when the
// share is positive) and RAM at floorUSD per core-hour. A zero share
// offers nothing.
func newCPUPool(host auction.Host, share, floorUSD float64) *cpuPool {
	p := &cpuPool{leases: map[string]cpuUse{}, floorMicro: USDToMicro(floorUSD)}
	if share <= 0 || host.CPUCores == 0 {
		return p
	}
	share = min(share, 1)
	p.cores = max(uint32(math.Floor(float64(host.CPUCores)*share)), 1)
	p.ramMiB = uint64(math.Floor(float64(host.RAMMiB) * share))
	p.floorMicro = max(p.floorMicro, 1)
	return p
}

// offer is the pool as a capacity record shows it; nil when nothing is
// offered.
func (p *cpuPool) offer() *auction.CPUOffer {
	if p == nil || p.cores == 0 {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	o := &auction.CPUOffer{Cores: p.cores, RAMMiB: p.ramMiB, FreeCores: p.cores, FreeRAMMiB: p.ramMiB, FloorMicro: p.floorMicro}
	for _, u := range p.leases {
		o.FreeCores -= min(u.cores, o.FreeCores)
		o.FreeRAMMiB -= min(u.ramMiB, o.FreeRAMMiB)
	}
	return o
}

// take holds res's cores and RAM for leaseID, or reports that they are
// not free. Taking again for the same lease is a no-op.
func (p *cpuPool) take(leaseID string, res auction.Resources) bool {
	if p == nil || p.cores == 0 {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.leases[leaseID]; ok {
		return true
	}
	u := cpuUse{cores: auction.CPUCoresOf(res), ramMiB: res.RAMMiB}
	var cores uint32
	var ram uint64
	for _, x := range p.leases {
		cores += x.cores
		ram += x.ramMiB
	}
	if cores+u.cores > p.cores || ram+u.ramMiB > p.ramMiB {
		return false
	}
	p.leases[leaseID] = u
	return true
}

// restore holds a stored CPU-only lease's share again after a restart,
// even past the pool's size (the share may have shrunk meanwhile).
func (p *cpuPool) restore(l *store.Lease) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.leases[l.ID] = cpuUse{cores: max(l.CPUCores, 1), ramMiB: l.RAMMiB}
}

// release frees a lease's share; it reports whether it held any.
func (p *cpuPool) release(leaseID string) bool {
	if p == nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.leases[leaseID]
	delete(p.leases, leaseID)
	return ok
}

// cpuOnly reports whether a provider lease is CPU-only work.
func cpuOnly(l *store.Lease) bool { return len(l.GPUs) == 0 }
