package cli

import (
	"embed"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/idlegrid/idlegrid/auction/sim"
)

// sampleTraces is the small trace set `idlegrid sim` replays when no
// --traces directory is given, so it runs from any clone and any binary:
// 2,000 Philly jobs (CC BY 4.0), a made-up table of 33 hosts and the FSDL
// cloud price table (MIT); testdata/traces/README.md has the sources and
// licences, docs/sim.md where the full traces are.
//
//go:embed testdata/traces/*.csv
var sampleTraces embed.FS

// The sample's files, and the defaults with a --traces directory (the
// full traces' layout, /work/shared/data/traces in development).
const (
	builtin      = "(built-in) "
	sampleJobs   = builtin + "philly-sample.csv"
	sampleNodes  = builtin + "nodes-sample.csv"
	samplePrices = builtin + "prices-fsdl-cloud-gpus.csv"

	fullJobs   = "alibaba-gpu-v2023/openb_pod_list_gpuspec33.csv"
	fullNodes  = "alibaba-gpu-v2023/openb_node_list_gpu_node.csv"
	fullPrices = "prices-fsdl/cloud-gpus.csv"
)

// simFlags are the flags of idlegrid sim.
type simFlags struct {
	traces, jobs, format, nodes, prices string
	offset, limit, providers            int
	lots, lotsPerRFQ, lotsSeen          int
	phantoms                            int
	noPrefixWatch                       bool
	poolScale, timeScale                float64
	flaky, flakyFail, spread, closing   float64
	cheaters, cheatRate, canaryRate     float64
	maxWait, exclusionDelay             time.Duration
	calendars, asJSON, perSeed          bool
	sample                              bool // the built-in sample, not files
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
		RunE: func(cmd *cobra.Command, _ []string) error {
			fl := cmd.Flags()
			if err := f.defaults(fl.Changed("jobs"), fl.Changed("nodes"), fl.Changed("prices"), fl.Changed("format")); err != nil {
				return err
			}
			if f.sample {
				fmt.Fprintln(cmd.ErrOrStderr(), "replaying the built-in sample (2,000 Philly jobs on 33 made-up hosts); --traces DIR replays the full traces (docs/sim.md)")
			}
			return runSim(g.stdout, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.traces, "traces", "", "directory of the full traces, the default paths are relative to it (default: the built-in sample)")
	fl.StringVar(&f.jobs, "jobs", "", "job trace CSV (default with --traces: "+fullJobs+")")
	fl.StringVar(&f.format, "format", "", "job trace format: openb or philly (default openb with --traces, philly for the sample)")
	fl.StringVar(&f.nodes, "nodes", "", "node table CSV, openb format (default with --traces: "+fullNodes+")")
	fl.StringVar(&f.prices, "prices", "", "price table CSV, FSDL format (default with --traces: "+fullPrices+")")
	fl.Float64Var(&f.spread, "floor-spread", 0.2, "half-width of the per-provider floor spread around the reference price")
	fl.IntVar(&f.offset, "offset", 0, "first job of the window (in arrival order)")
	fl.IntVar(&f.limit, "limit", 2000, "jobs in the window (0: all)")
	fl.IntVar(&f.providers, "providers", 0, "providers drawn from the node table (0: all)")
	fl.Float64Var(&f.poolScale, "pool-scale", 1, "multiplies the number of providers")
	fl.Float64Var(&f.timeScale, "time-scale", 1, "divides arrival times (2: jobs arrive twice as fast)")
	fl.Float64Var(&f.flaky, "flaky", 0, "share of providers that fail leases")
	fl.Float64Var(&f.flakyFail, "flaky-fail", 0.3, "failure probability of a flaky provider's lease")
	fl.Float64Var(&f.cheaters, "cheaters", 0.1, "share of providers that return wrong results")
	fl.Float64Var(&f.cheatRate, "cheat-rate", sim.DefaultCheatRate, "share of a cheater's leases whose result is wrong")
	fl.Float64Var(&f.canaryRate, "canary-rate", sim.DefaultNodePolicy().CanaryRate, "share of the renter's completed jobs re-run on a second provider to check (market.canary_rate)")
	f.exclusionDelay = sim.DefaultExclusionDelay
	fl.Var((*durationValue)(&f.exclusionDelay), "exclusion-delay", "time from a caught lie to the liar's exclusion on every node")
	f.maxWait = 24 * time.Hour
	fl.Var((*durationValue)(&f.maxWait), "max-wait", "how long a job waits before it counts as unplaced, e.g. 24h or 2d")
	fl.BoolVar(&f.calendars, "calendars", false, "give providers weekday peak calendars")
	fl.Float64Var(&f.closing, "closing-calendars", 0, fmt.Sprintf("share of providers open only %d hours a day, from a random hour (idle-time hosts)", sim.IdleOpenHours))
	fl.StringVar(&f.pricing, "pricing", "first", "RFQ pricing: first or second")
	fl.StringVar(&f.seeds, "seeds", "1,2,3,4,5", "comma-separated seeds")
	fl.StringVar(&f.policies, "policies", "", "comma-separated policies (default all: "+strings.Join(sim.AllPolicies(), ",")+")")
	fl.IntVar(&f.lots, "lots", sim.DefaultLots, "lots each shard splits into under the idlegrid-lots policy (a power of two; docs/protocol.md §3.6, planned)")
	fl.IntVar(&f.lotsPerRFQ, "lots-per-rfq", sim.DefaultLotsPerRFQ, "lots of each shard an RFQ goes to under idlegrid-lots")
	fl.IntVar(&f.lotsSeen, "lots-seen", 0, "lots of each shard a renter follows under idlegrid-lots, from the one its key hashes to (0: all)")
	fl.IntVar(&f.phantoms, "phantoms", 0, "providers per shard, under idlegrid-bounded and idlegrid-lots, that gossip digests cheaper than any real one and never bid")
	fl.BoolVar(&f.noPrefixWatch, "no-prefix-watch", false, "leave --phantoms in every view, rather than silencing them after 3 auctions missed as nodes do")
	fl.BoolVar(&f.asJSON, "json", false, "print JSON instead of a table")
	fl.BoolVar(&f.perSeed, "per-seed", false, "after the table, one row per policy and seed at equal work (cost per placed GPU-hour, against greedy's)")
	cmd.AddCommand(newSimScaleCmd(g))
	return cmd
}

// defaults fills the paths the user left out: the full traces' layout
// under --traces, else the built-in sample. A table given by path with
// no --traces is read as it is; the sample fills only the others.
func (f *simFlags) defaults(jobs, nodes, prices, format bool) error {
	if f.traces != "" {
		if _, err := os.Stat(f.traces); err != nil {
			return fmt.Errorf("sim: --traces %s: no such directory (docs/sim.md says where to get the traces)", f.traces)
		}
		f.jobs, f.nodes, f.prices = pick(jobs, f.jobs, fullJobs), pick(nodes, f.nodes, fullNodes), pick(prices, f.prices, fullPrices)
		f.format = pick(format, f.format, "openb")
		return nil
	}
	f.sample = !jobs && !nodes && !prices
	f.jobs, f.nodes, f.prices = pick(jobs, f.jobs, sampleJobs), pick(nodes, f.nodes, sampleNodes), pick(prices, f.prices, samplePrices)
	f.format = pick(format, f.format, map[bool]string{true: "openb", false: "philly"}[jobs])
	return nil
}

func pick(set bool, v, def string) string {
	if set {
		return v
	}
	return def
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
		ClosingCalendars: f.closing,
		CheaterShare:     f.cheaters, CheatRate: f.cheatRate, CanaryRate: f.canaryRate, ExclusionDelay: f.exclusionDelay,
		Lots: f.lots, LotsPerRFQ: f.lotsPerRFQ, LotsSeen: f.lotsSeen,
		Phantoms: f.phantoms, NoPrefixWatch: f.noPrefixWatch,
	}
	var err error
	if cfg.Pricing, err = sim.ParsePricing(f.pricing); err != nil {
		return err
	}
	for _, s := range strings.Split(f.seeds, ",") {
		n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return fmt.Errorf("sim: --seeds %q: want whole numbers separated by commas, such as 1,2,3", f.seeds)
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
	if err := res.WriteTable(out); err != nil || !f.perSeed {
		return err
	}
	fmt.Fprintln(out)
	return res.WriteSeedTable(out)
}

// readFile reads a trace file, or one of the built-in sample's.
func readFile(path string, read func(io.Reader) error) error {
	var fh fs.File
	var err error
	if name, ok := strings.CutPrefix(path, builtin); ok {
		fh, err = sampleTraces.Open("testdata/traces/" + name)
	} else {
		fh, err = os.Open(path)
	}
	if err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	defer fh.Close()
	return read(fh)
}
