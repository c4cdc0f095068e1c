package sim

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/idlegrid/idlegrid/attest/reputation"
	"github.com/idlegrid/idlegrid/auction"
)

// epoch is the replay's time zero: a Monday 00:00 UTC, so that calendars
// line up with the trace's first day.
var epoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// tierFactor scales a provider's silver floor to each tier's.
var tierFactor = map[auction.Tier]float64{auction.TierGold: 1.25, auction.TierSilver: 1, auction.TierBronze: 0.6}

// provider is one host: its capacity record (whose GPU Free flags the
// replay keeps current) and what the replay knows about it.
type provider struct {
	idx   int
	cap   *auction.Capacity
	free  int
	uuid  map[string]int // GPU UUID -> index in cap.GPUs
	flaky bool
	// cheater returns wrong results (Config.CheatRate of its leases);
	// excludedAt is when a wrong-result proof excludes it (-1: never).
	cheater    bool
	excludedAt int64
	// minPriceFactor is the lowest price a bid can reach relative to its
	// tier floor (the gap discount on a calendar), for the lower bound.
	minPriceFactor float64
}

func (p *provider) model() string { return p.cap.GPUs[0].Model }

// floor is the provider's floor for tier t.
func (p *provider) floor(t auction.Tier) uint64 { return p.cap.Floor.For(t) }

// jobState is a job during a replay.
type jobState struct {
	Job
	arrival  int64 // scaled, seconds from the replay's start
	deadline int64 // the wait gives up after this
	attempt  int
	allowed  []string // provider models it accepts, sorted
	maxPrice uint64
	done     bool
	started  int64 // start of the successful run
	dropped  bool
	// order is the job's place in arrival order (the renter's n-th job).
	order int
	// canaryOf is the job a canary run checks (nil for the trace's jobs);
	// avoid are providers the job must not use: a canary's origin's, and
	// in the node's row those whose failure it is re-auctioned after.
	canaryOf *jobState
	avoid    []int
	// liars are the providers of the completed run that returned a wrong
	// result, and wrong says there were some; rejected: a canary showed
	// the renter so, and it did not keep that result. onCheater: the run
	// had a cheater among its providers.
	liars                      []int
	wrong, rejected, onCheater bool
}

// lease is one provider's part of one run of a job.
type lease struct {
	job        *jobState
	prov       int
	gpus       []int
	priceMicro uint64
	floorMicro uint64
	start, end int64
	failed     bool // the run ended in a failure
	culprit    bool // this member caused it
	wrong      bool // this member returned a wrong result (a cheater's lie)
}

// World is what a policy sees: the providers and their free GPUs, the
// renter's reputation fold and a seeded random source.
type World struct {
	cfg   *Config
	seed  uint64
	now   int64
	provs []*provider
	// byModel lists provider indices per model; models is its sorted keys.
	byModel      map[string][]int
	models       []string
	freeByModel  map[string]int
	totalByModel map[string]int
	busyByModel  map[string]int
	rep          *reputation.Running
	rng          *rand.Rand
	// index is each model's price index: an exponential moving average
	// of cleared prices (0 until the first award).
	index map[string]float64
	// calendars: some provider has a calendar.
	calendars bool
}

func newWorld(cfg *Config, seed uint64) *World {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	nodes := slices.Clone(cfg.Nodes)
	n := len(nodes)
	if cfg.Providers > 0 {
		n = min(cfg.Providers, n)
	}
	n = max(1, int(math.Round(float64(n)*cfg.PoolScale)))
	if n < len(nodes) {
		// A sample of the table, drawn per seed; otherwise table order,
		// which the posted-price baseline follows.
		rng.Shuffle(len(nodes), func(i, j int) { nodes[i], nodes[j] = nodes[j], nodes[i] })
	}
	for len(nodes) < n { // a scale above 1 repeats nodes
		nodes = append(nodes, nodes[len(nodes)%len(cfg.Nodes)])
	}
	nodes = nodes[:n]
	w := &World{
		cfg: cfg, seed: seed, byModel: map[string][]int{}, freeByModel: map[string]int{},
		totalByModel: map[string]int{}, busyByModel: map[string]int{},
		rep: reputation.NewRunning(cfg.Reputation), rng: rand.New(rand.NewPCG(seed, 0xa11)), index: map[string]float64{},
	}
	flakyRng := rand.New(rand.NewPCG(seed, 0xf1a))
	cheatRng := rand.New(rand.NewPCG(seed, 0xc4ea7))
	calRng := rand.New(rand.NewPCG(seed, 0xca1))
	for i, nd := range nodes {
		ref := float64(cfg.Prices.Price(nd.Model))
		silver := ref * (1 + cfg.FloorSpread*(2*rng.Float64()-1))
		p := &provider{idx: i, free: nd.GPUs, uuid: map[string]int{}, flaky: flakyRng.Float64() < cfg.FlakyShare, minPriceFactor: 1,
			cheater: cheatRng.Float64() < cfg.CheaterShare, excludedAt: -1}
		c := &auction.Capacity{
			V: auction.CapacityVersion, Peer: fmt.Sprintf("p%04d", i),
			Host:     auction.Host{CPUCores: 1 << 16, RAMMiB: 1 << 30, DiskGiB: 1 << 20},
			Region:   auction.Region{Country: "de"},
			Runtimes: []string{auction.RuntimeDocker},
			Floor: auction.FloorPrice{
				Gold: uint64(silver * tierFactor[auction.TierGold]), Silver: uint64(silver),
				Bronze: uint64(silver * tierFactor[auction.TierBronze]),
			},
			Policy: auction.Policy{Tiers: auction.Tiers},
		}
		for g := range nd.GPUs {
			uuid := fmt.Sprintf("%s-g%d", c.Peer, g)
			c.GPUs = append(c.GPUs, auction.GPU{Index: uint32(g), UUID: uuid, Model: nd.Model, VRAMMiB: 16 << 10, ComputeCap: "8.0", Free: true})
			p.uuid[uuid] = g
		}
		closing, opens := calRng.Float64() < cfg.ClosingCalendars, calRng.IntN(24)
		switch {
		case closing:
			c.Calendar = idleCalendar(opens)
		case cfg.Calendars:
			c.Calendar = weekdayCalendar()
		}
		if len(c.Calendar) > 0 {
			p.minPriceFactor = 1 - min(max(cfg.Bid.GapDiscount, 0), 1)
		}
		p.cap = c
		w.calendars = w.calendars || len(c.Calendar) > 0
		w.provs = append(w.provs, p)
		w.byModel[nd.Model] = append(w.byModel[nd.Model], i)
		w.freeByModel[nd.Model] += nd.GPUs
		w.totalByModel[nd.Model] += nd.GPUs
	}
	for m := range w.byModel {
		w.models = append(w.models, m)
	}
	slices.Sort(w.models)
	return w
}

// weekdayCalendar is open all week, at 1.2x 08:00-20:00 UTC Monday to
// Friday; the windows abut, so there are no gaps to discount except at
// the week's end.
func weekdayCalendar() []auction.Window {
	var cal []auction.Window
	for d := time.Sunday; d <= time.Saturday; d++ {
		if d == time.Sunday || d == time.Saturday {
			cal = append(cal, auction.Window{Day: d, StartMin: 0, EndMin: 1440, FactorPermille: 1000})
			continue
		}
		cal = append(cal,
			auction.Window{Day: d, StartMin: 0, EndMin: 8 * 60, FactorPermille: 1000},
			auction.Window{Day: d, StartMin: 8 * 60, EndMin: 20 * 60, FactorPermille: 1200},
			auction.Window{Day: d, StartMin: 20 * 60, EndMin: 1440, FactorPermille: 1000})
	}
	return cal
}

// IdleOpenHours is how long an idle-time host's calendar
// (Config.ClosingCalendars) is open each day.
const IdleOpenHours = 8

// idleCalendar is open IdleOpenHours every day from opens:00 UTC, at 1.0x;
// a period that crosses midnight is two abutting windows.
func idleCalendar(opens int) []auction.Window {
	var cal []auction.Window
	start, end := uint16(opens*60), uint16((opens+IdleOpenHours)*60)
	for d := time.Sunday; d <= time.Saturday; d++ {
		if end > 1440 {
			cal = append(cal, auction.Window{Day: d, StartMin: 0, EndMin: end - 1440, FactorPermille: 1000})
		}
		cal = append(cal, auction.Window{Day: d, StartMin: start, EndMin: min(end, 1440), FactorPermille: 1000})
	}
	return cal
}

// newJobs scales and annotates the trace's jobs for this world.
func (w *World) newJobs() []*jobState {
	out := make([]*jobState, 0, len(w.cfg.Jobs))
	for _, j := range w.cfg.Jobs {
		js := &jobState{Job: j, arrival: int64(float64(j.ArrivalSec) / w.cfg.TimeScale)}
		js.deadline = js.arrival + int64(w.cfg.MaxWait/time.Second)
		var ref uint64
		for _, m := range w.models {
			if auction.ModelAccepted(j.Models, m) {
				js.allowed = append(js.allowed, m)
				ref = max(ref, w.cfg.Prices.Price(m))
			}
		}
		js.maxPrice = uint64(float64(ref) * tierFactor[j.Tier] * w.cfg.MaxPriceFactor)
		out = append(out, js)
	}
	slices.SortStableFunc(out, func(a, b *jobState) int { return cmp.Compare(a.arrival, b.arrival) })
	for i, j := range out {
		j.order = i
	}
	return out
}

// freeFor counts the free GPUs j may use: with calendars, only on hosts
// that can take it now (candidates), as a renter's market view shows them.
func (w *World) freeFor(j *jobState) int {
	n := 0
	if w.calendars {
		for _, p := range w.candidates(j) {
			n += p.free
		}
		return n
	}
	for _, m := range j.allowed {
		n += w.freeByModel[m]
	}
	return n
}

// candidates lists providers with free GPUs j may use, by index: not
// excluded by a wrong-result proof, nor one j avoids, and whose calendar
// lets them take j now as their Quote would judge it (open, and open
// until the job ends; for bronze, for the notice), so the baselines, too,
// place only where a host takes work.
func (w *World) candidates(j *jobState) []*provider {
	var out []*provider
	now := w.nowTime()
	rfq := &auction.RFQ{Tier: j.Tier, ExpectedDurationSec: uint64(j.DurationSec)}
	for _, m := range j.allowed {
		for _, i := range w.byModel[m] {
			p := w.provs[i]
			if p.free > 0 && !p.excluded(w.now) && !slices.Contains(j.avoid, i) &&
				(!w.calendars || p.cap.CalendarAdmits(rfq, now, w.cfg.Bid.NoticeSec)) {
				out = append(out, w.provs[i])
			}
		}
	}
	slices.SortFunc(out, func(a, b *provider) int { return cmp.Compare(a.idx, b.idx) })
	return out
}

// freeGPUs returns the first n free GPU indices of p.
func (p *provider) freeGPUs(n int) []int {
	var out []int
	for i, g := range p.cap.GPUs {
		if len(out) == n {
			break
		}
		if g.Free {
			out = append(out, i)
		}
	}
	return out
}

// failDraw is the fate of a lease of attempt a of job j on provider p:
// whether it fails and at which fraction of its duration. It is a hash of
// the seed and the three, so every policy meets the same fate for the same
// choice (and the clairvoyant one can look it up).
func (w *World) failDraw(j *jobState, p *provider) (bool, float64) {
	if !p.flaky {
		return false, 0
	}
	h := splitmix(w.seed ^ splitmix(uint64(j.ID)<<20^uint64(j.attempt)<<8) ^ splitmix(uint64(p.idx)+0x9e37))
	u1 := float64(h>>11) / (1 << 53)
	u2 := float64(splitmix(h)>>11) / (1 << 53)
	return u1 < w.cfg.FlakyFailProb, u2
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
