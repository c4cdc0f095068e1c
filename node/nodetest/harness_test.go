package nodetest_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/node"
	"github.com/idlegrid/idlegrid/node/nodetest"
	"github.com/idlegrid/idlegrid/store"
)

// testModule is the WASM module CID test jobs name (only the auction runs
// until the execution layer lands, so it is never fetched).
var testModule = nodetest.DemoModule

type jobOpts struct {
	name      string
	gpus      int
	model     string
	tier      string
	maxPrice  float64
	duration  string
	minNotice string
	bidWindow string // default 3s
	maxWait   string // default the cluster's market.max_wait, 0: unfilled at the first auction
}

func jobYAML(o jobOpts) []byte {
	if o.model == "" {
		o.model = "a10"
	}
	if o.tier == "" {
		o.tier = "bronze"
	}
	if o.maxPrice == 0 {
		o.maxPrice = 5
	}
	if o.duration == "" {
		o.duration = "2s"
	}
	// A generous window: it closes early once every provider the renter
	// expects has answered, and a loaded CI machine must not make a slow
	// bid lose by arriving late.
	if o.bidWindow == "" {
		o.bidWindow = "3s"
	}
	// The providers' fake runtime runs the command as a script: the work
	// lasts the job's duration less a margin (half of it, at most 5 s).
	// The duration is the lease's maximum, counted from the award: work
	// that lasted all of it expired instead of completing whenever a
	// loaded machine was slow to start it.
	d, err := time.ParseDuration(o.duration)
	if err != nil {
		panic(fmt.Sprintf("jobYAML: duration %q: %v", o.duration, err))
	}
	work := d - min(d/2, 5*time.Second)
	s := fmt.Sprintf("name: %s\nmodule: %s\ncommand: [\"sleep:%s\"]\ngpus: %d\ngpu: [%s]\ntier: %s\nmax_price: %g\nduration: %s\nbid_window: %s\n",
		o.name, testModule, work, o.gpus, o.model, o.tier, o.maxPrice, o.duration, o.bidWindow)
	if o.minNotice != "" {
		s += "min_notice: " + o.minNotice + "\n"
	}
	if o.maxWait != "" {
		s += "max_wait: " + o.maxWait + "\n"
	}
	return []byte(s)
}

// providerCfg returns a Configure func giving provider i its GPUs, floor
// and tiers.
type provOpts struct {
	profile string
	gpus    int
	bronze  float64
	tiers   []string
	notice  time.Duration
	// cpuBeside offers the CPU share beside the GPUs
	// (provider.cpu_beside_gpus).
	cpuBeside bool
}

func auctionCluster(t *testing.T, provs []provOpts, o nodetest.Options) (*nodetest.Cluster, *node.Node) {
	t.Helper()
	n := len(provs) + 2
	extra := o.Configure
	o.Configure = func(i int, cfg *node.Config) {
		cfg.P2P.GossipHeartbeat = 100 * time.Millisecond
		// New providers have no gold badge; the auction tests post gold
		// work to them anyway (badges are tested in reputation_test.go).
		cfg.Market.GoldNeedsBadge = false
		if extra != nil {
			defer extra(i, cfg)
		}
		if i == 0 || i == n-1 {
			return
		}
		p := provs[i-1]
		if p.profile == "" {
			p.profile = "a10"
		}
		cfg.GPU.Sim.Profiles = slices.Repeat([]string{p.profile}, max(p.gpus, 1))
		cfg.Provider.FloorUSD = node.FloorUSD{Gold: p.bronze * 3, Silver: p.bronze * 2, Bronze: p.bronze}
		if len(p.tiers) > 0 {
			cfg.Provider.Tiers = p.tiers
		}
		if p.notice > 0 {
			cfg.Provider.PreemptNotice = p.notice
		}
		cfg.Provider.CPUBesideGPUs = p.cpuBeside
	}
	c := nodetest.New(t, n, o)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute+time.Duration(len(provs))*time.Second)
	defer cancel()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	renter := c.ByRole(node.RoleRenter)[0].Node
	waitAllAdvertised(t, ctx, c, renter, len(provs))
	return c, renter
}

func waitJob(t *testing.T, ctx context.Context, r *node.Node, id string, states ...string) *store.Job {
	t.Helper()
	var j *store.Job
	err := nodetest.WaitFor(ctx, "job "+id+" to reach "+strings.Join(states, "/"), func() bool {
		var err error
		j, err = r.Store().GetJob(id)
		return err == nil && slices.Contains(states, j.State)
	})
	if err != nil {
		if j != nil {
			for _, ev := range j.Events {
				t.Logf("  %s: %s", ev.Kind, ev.Message)
			}
			t.Fatalf("%v (state %s: %s)", err, j.State, j.Reason)
		}
		t.Fatal(err)
	}
	return j
}

func jobLeases(t *testing.T, r *node.Node, j *store.Job) []*store.Lease {
	t.Helper()
	var out []*store.Lease
	for _, id := range j.Leases {
		l, err := r.Store().Leases()
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range l {
			if x.ID == id {
				out = append(out, x)
			}
		}
	}
	return out
}
