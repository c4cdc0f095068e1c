package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/auction"
)

// tenJobs is the hand-made case: three providers, no two jobs at once, so
// each policy's choice is known. A and B hold model x (floors 1 and 2
// USD/h), C holds y (0.5 USD/h).
func tenJobs() Config {
	h := int64(3600)
	job := func(i, gpus int, models ...string) Job {
		return Job{ArrivalSec: int64(i) * 2 * h, DurationSec: h, GPUs: gpus, Models: models, Tier: auction.TierSilver}
	}
	jobs := []Job{
		job(0, 1), job(1, 2, "x"), job(2, 4), job(3, 6, "x"), job(4, 8),
		job(5, 1, "y"), job(6, 3), job(7, 2, "x"), job(8, 10), job(9, 11),
	}
	for i := range jobs {
		jobs[i].ID = i
	}
	return Config{
		Jobs:   jobs,
		Nodes:  []Node{{Name: "A", Model: "x", GPUs: 4}, {Name: "B", Model: "x", GPUs: 2}, {Name: "C", Model: "y", GPUs: 4}},
		Prices: PriceTable{"x": 1_000_000, "y": 500_000},
		// B's floor differs from A's: the spread is 0, so B gets its own
		// reference price through a separate model name below.
		Seeds: []uint64{1},
	}
}

func TestTenJobBaselines(t *testing.T) {
	cfg := tenJobs()
	// Give B twice A's floor: scale B's price through its own slug and
	// let jobs accept both x slugs.
	cfg.Nodes[1].Model = "x-dear"
	cfg.Prices["x-dear"] = 2_000_000
	for i := range cfg.Jobs {
		if slices.Contains(cfg.Jobs[i].Models, "x") {
			cfg.Jobs[i].Models = []string{"x"} // "x" matches "x-dear" as a family
		}
	}
	res, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// By hand (USD): greedy takes the cheapest floors, posted the first
	// host in table order that holds the job, else A, B, C in turn; job 9
	// (11 GPUs) fits nowhere.
	want := map[string]float64{
		PolicyGreedy: 0.5 + 2 + 2 + 8 + 6 + 0.5 + 1.5 + 2 + 10,
		PolicyPosted: 1 + 2 + 4 + 8 + 9 + 0.5 + 3 + 2 + 10,
		// Without contention or failures the clairvoyant and the markets
		// find greedy's answer.
		PolicyClairvoyant: 32.5, PolicyIdlegrid: 32.5, PolicyPriceOnly: 32.5,
	}
	requested := 1. + 2 + 4 + 6 + 8 + 1 + 3 + 2 + 10 + 11
	for _, m := range res.Runs {
		if m.BoundUSD > m.CostUSD+1e-9 {
			t.Errorf("%s: bound %v above cost %v", m.Policy, m.BoundUSD, m.CostUSD)
		}
		// The bound lets work wait for the cheap host (here C), so it lies
		// between the capacity-free bound (every GPU-hour at its cheapest
		// allowed floor: 26 at 0.5, 10 at 1, 1 at 0.5) and greedy's 32.5.
		if m.BoundUSD < 13+10+0.5-1e-6 || m.BoundUSD > 32.5+1e-6 {
			t.Errorf("%s: bound %v outside [23.5, 32.5]", m.Policy, m.BoundUSD)
		}
		if want := m.CostUSD / (requested - 11); math.Abs(m.CostPerGPUHour-want) > 1e-9 {
			t.Errorf("%s: cost per placed GPU-hour %v, want %v", m.Policy, m.CostPerGPUHour, want)
		}
		if math.Abs(m.Unplaced-0.1) > 1e-9 || math.Abs(m.Fill-(requested-11)/requested) > 1e-9 || m.DelayP95Min != 0 {
			t.Errorf("%s: unplaced %v fill %v delay %v, want 0.1, %v, 0", m.Policy, m.Unplaced, m.Fill, m.DelayP95Min, (requested-11)/requested)
		}
		if w, ok := want[m.Policy]; ok && math.Abs(m.CostUSD-w) > 1e-6 {
			t.Errorf("%s: cost %v, want %v", m.Policy, m.CostUSD, w)
		}
		if m.Policy == PolicyRandom && (m.CostUSD < 32.5-1e-9 || m.CostUSD > 26*2+10*2+0.5+1e-9) {
			t.Errorf("random: cost %v outside [32.5, dearest feasible]", m.CostUSD)
		}
	}
}

// synthetic makes n jobs on p providers of three models with a seeded mix
// of sizes, durations and constraints: a market under load.
func synthetic(n, p int, load float64) Config {
	rng := rand.New(rand.NewPCG(7, 7))
	models := []string{"t4-16gb", "v100-16gb", "a10-24gb"}
	var nodes []Node
	gpus := 0
	for i := range p {
		g := []int{1, 2, 4, 8}[rng.IntN(4)]
		nodes = append(nodes, Node{Name: fmt.Sprint(i), Model: models[rng.IntN(3)], GPUs: g})
		gpus += g
	}
	var jobs []Job
	at := 0.0
	meanDur := 3600.0
	meanGPUs := 2.0
	rate := load * float64(gpus) / (meanDur * meanGPUs) // arrivals per second
	for i := range n {
		at += rng.ExpFloat64() / rate
		j := Job{ID: i, ArrivalSec: int64(at), DurationSec: 60 + int64(rng.ExpFloat64()*(meanDur-60)),
			GPUs: []int{1, 1, 1, 2, 4, 8}[rng.IntN(6)], Tier: auction.TierSilver}
		if rng.IntN(3) == 0 {
			j.Models = []string{models[rng.IntN(3)]}
		}
		if rng.IntN(10) == 0 {
			j.Tier = auction.TierBronze
		}
		jobs = append(jobs, j)
	}
	return Config{
		Jobs: jobs, Nodes: nodes, FloorSpread: 0.2,
		Prices:     PriceTable{"t4-16gb": 400_000, "v100-16gb": 900_000, "a10-24gb": 1_100_000},
		FlakyShare: 0.1, Seeds: []uint64{1, 2}, MaxWait: 6 * time.Hour,
	}
}

func TestDeterministicPerSeed(t *testing.T) {
	cfg := synthetic(300, 20, 0.8)
	a, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two runs of the same config differ")
	}
	cfg.Seeds = []uint64{3}
	c, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if reflect.DeepEqual(a.Runs[0], c.Runs[0]) {
		t.Fatal("another seed gave the same replay")
	}
}

// TestConservation replays every policy under load with flaky providers
// and checks each lease against capacity: no GPU in two leases at once,
// every run on the GPUs its job asked for.
func TestConservation(t *testing.T) {
	cfg := synthetic(400, 15, 1.2)
	cfg.fill()
	for _, name := range cfg.Policies {
		r, err := runReplay(&cfg, 1, policies[name]())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		type use struct{ start, end int64 }
		byGPU := map[[2]int][]use{}
		runs := map[string]int{} // job/start -> GPUs
		for _, l := range r.leases {
			p := r.w.provs[l.prov]
			if !auction.ModelAccepted(l.job.Models, p.model()) {
				t.Fatalf("%s: job %d on model %s, wants %v", name, l.job.ID, p.model(), l.job.Models)
			}
			if l.end < l.start || l.start < l.job.arrival {
				t.Fatalf("%s: lease %+v outside its job's time", name, l)
			}
			for _, g := range l.gpus {
				byGPU[[2]int{l.prov, g}] = append(byGPU[[2]int{l.prov, g}], use{l.start, l.end})
			}
			runs[fmt.Sprint(l.job.ID, "/", l.start)] += len(l.gpus)
		}
		for k, n := range runs {
			var id int
			fmt.Sscan(strings.Split(k, "/")[0], &id)
			if n != cfg.Jobs[id].GPUs {
				t.Fatalf("%s: run %s placed %d GPUs, job wants %d", name, k, n, cfg.Jobs[id].GPUs)
			}
		}
		for k, us := range byGPU {
			slices.SortFunc(us, func(a, b use) int { return int(a.start - b.start) })
			for i := 1; i < len(us); i++ {
				if us[i].start < us[i-1].end {
					t.Fatalf("%s: GPU %v in two leases at once: %v", name, k, us[i-1:i+1])
				}
			}
		}
		if len(r.leases) == 0 {
			t.Fatalf("%s placed nothing", name)
		}
	}
}

func TestLowerBoundNeverExceedsAnyPolicy(t *testing.T) {
	for _, load := range []float64{0.5, 1.5} {
		res, err := Run(synthetic(300, 12, load))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range res.Runs {
			if m.BoundUSD <= 0 || m.BoundUSD > m.CostUSD*(1+1e-9) {
				t.Errorf("load %v %s seed %d: bound %v, cost %v", load, m.Policy, m.Seed, m.BoundUSD, m.CostUSD)
			}
		}
	}
}

// TestTraceWindow replays a small window of each shared trace; it skips
// when the traces are not checked out next to the repository.
func TestTraceWindow(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "shared", "data", "traces")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("no traces at %s", dir)
	}
	open := func(p string) *os.File {
		f, err := os.Open(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	nodes, err := ReadOpenBNodes(open("alibaba-gpu-v2023/openb_node_list_gpu_node.csv"))
	if err != nil {
		t.Fatal(err)
	}
	prices, err := ReadPrices(open("prices-fsdl/cloud-gpus.csv"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ format, path string }{
		{"openb", "alibaba-gpu-v2023/openb_pod_list_gpuspec33.csv"},
		{"philly", "philly/philly.csv"},
	} {
		jobs, err := ReadJobs(tc.format, open(tc.path))
		if err != nil {
			t.Fatal(err)
		}
		cfg := DefaultConfig(Window(jobs, 100, 150), nodes, prices)
		cfg.Providers, cfg.Seeds, cfg.Policies = 40, []uint64{1}, []string{PolicyIdlegrid, PolicyGreedy}
		res, err := Run(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range res.Runs {
			if m.Fill <= 0 || m.CostUSD <= 0 || m.BoundUSD > m.CostUSD {
				t.Errorf("%s %s: %+v", tc.format, m.Policy, m)
			}
		}
	}
}

// BenchmarkReplay is the size: 8,000 jobs on 500 providers,
// through the full market (one seed, one policy per iteration).
func BenchmarkReplay(b *testing.B) {
	cfg := synthetic(8000, 500, 0.8)
	cfg.Seeds, cfg.Policies = []uint64{1}, []string{PolicyIdlegrid}
	for b.Loop() {
		if _, err := Run(cfg); err != nil {
			b.Fatal(err)
		}
	}
}
