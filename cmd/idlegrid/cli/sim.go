package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/idlegrid/idlegrid/auction/sim"
	"github.com/spf13/cobra"
)

// simFlags are the flags of idlegrid sim.
type simFlags struct {
	traces, jobs, format, nodes, prices string
	offset, limit, providers            int
	poolScale, timeScale                float64
	flaky, flakyFail, spread            float64
	maxWait                             time.Duration
	calendars, asJSON                   bool
	pricing, seeds, policies            string
}

func newSimCmd(g *globals) *cobra.Command {
	var f simFlags
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Replay a job trace through the market and baselines (offline)",
		Long: "sim replays a GPU job trace on a node table through idlegrid's real bidder and matcher and through\n" +
			"posted-price, greedy, random and clairvoyant baselines, with an LP lower bound; see docs/sim.md.\n" +
			"It reads local CSV files only and starts no node.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runSim(g.stdout, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.traces, "traces", "../shared/data/traces", "directory the default trace paths are relative to")
	fl.StringVar(&f.jobs, "jobs", "alibaba-gpu-v2023/openb_pod_list_gpuspec33.csv", "job trace CSV")
	fl.StringVar(&f.format, "format", "openb", "job trace format: openb or philly")
	fl.StringVar(&f.nodes, "nodes", "alibaba-gpu-v2023/openb_node_list_gpu_node.csv", "node table CSV (openb format)")
	fl.StringVar(&f.prices, "prices", "prices-fsdl/cloud-gpus.csv", "price table CSV (FSDL format)")
	fl.Float64Var(&f.spread, "floor-spread", 0.2, "half-width of the per-provider floor spread around the reference price")
	fl.IntVar(&f.offset, "offset", 0, "first job of the window (in arrival order)")
	fl.IntVar(&f.limit, "limit", 2000, "jobs in the window (0: all)")
	fl.IntVar(&f.providers, "providers", 0, "providers drawn from the node table (0: all)")
	fl.Float64Var(&f.poolScale, "pool-scale", 1, "multiplies the number of providers")
	fl.Float64Var(&f.timeScale, "time-scale", 1, "divides arrival times (2: jobs arrive twice as fast)")
	fl.Float64Var(&f.flaky, "flaky", 0, "share of providers that fail leases")
	fl.Float64Var(&f.flakyFail, "flaky-fail", 0.3, "failure probability of a flaky provider's lease")
	fl.DurationVar(&f.maxWait, "max-wait", 24*time.Hour, "how long a job waits before it counts as unplaced")
	fl.BoolVar(&f.calendars, "calendars", false, "give providers weekday peak calendars")
	fl.StringVar(&f.pricing, "pricing", "first", "RFQ pricing: first or second")
	fl.StringVar(&f.seeds, "seeds", "1,2,3,4,5", "comma-separated seeds")
	fl.StringVar(&f.policies, "policies", "", "comma-separated policies (default all: "+strings.Join(sim.AllPolicies(), ",")+")")
	fl.BoolVar(&f.asJSON, "json", false, "print JSON instead of a table")
	cmd.AddCommand(newSimScaleCmd(g))
	return cmd
}

func runSim(out io.Writer, f simFlags) error {
	path := func(p string) string {
		if filepath.IsAbs(p) || f.traces == "" {
			return p
		}
		if _, err := os.Stat(p); err == nil {
			return p
		}
		return filepath.Join(f.traces, p)
	}
	var jobs []sim.Job
	var nodes []sim.Node
	var prices sim.PriceTable
	if err := readFile(path(f.jobs), func(r io.Reader) (err error) { jobs, err = sim.ReadJobs(f.format, r); return err }); err != nil {
		return err
	}
	if err := readFile(path(f.nodes), func(r io.Reader) (err error) { nodes, err = sim.ReadOpenBNodes(r); return err }); err != nil {
		return err
	}
	if err := readFile(path(f.prices), func(r io.Reader) (err error) { prices, err = sim.ReadPrices(r); return err }); err != nil {
		return err
	}
	cfg := sim.Config{
		Jobs: sim.Window(jobs, f.offset, f.limit), Nodes: nodes, Prices: prices,
		Providers: f.providers, PoolScale: f.poolScale, TimeScale: f.timeScale,
		FloorSpread: f.spread, FlakyShare: f.flaky, FlakyFailProb: f.flakyFail, MaxWait: f.maxWait, Calendars: f.calendars,
	}
	var err error
	if cfg.Pricing, err = sim.ParsePricing(f.pricing); err != nil {
		return err
	}
	for _, s := range strings.Split(f.seeds, ",") {
		n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return fmt.Errorf("sim: --seeds %q: %w", f.seeds, err)
		}
		cfg.Seeds = append(cfg.Seeds, n)
	}
	if f.policies != "" {
		cfg.Policies = strings.Split(f.policies, ",")
	}
	res, err := sim.Run(cfg)
	if err != nil {
		return err
	}
	if f.asJSON {
		return res.WriteJSON(out)
	}
	return res.WriteTable(out)
}

func readFile(path string, read func(io.Reader) error) error {
	fh, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	defer fh.Close()
	return read(fh)
}
