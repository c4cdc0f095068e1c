package sim

import (
	"cmp"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/idlegrid/idlegrid/auction"
)

// Job is one request in a trace.
type Job struct {
	ID          int
	ArrivalSec  int64 // from the start of the trace
	DurationSec int64
	GPUs        int
	// Models are the acceptable model slugs; empty: any.
	Models []string
	Tier   auction.Tier
}

// Node is one provider host in a node table.
type Node struct {
	Name  string
	Model string // model slug, e.g. "v100-16gb"
	GPUs  int
}

// PriceTable maps a model slug to its reference (silver) price, uUSD per
// GPU-hour.
type PriceTable map[string]uint64

// maxTraceRows bounds what one reader accepts, so a wrong file fails
// instead of eating memory.
const maxTraceRows = 2_000_000

// ErrTrace is wrapped by every trace reader's error.
var ErrTrace = errors.New("bad trace")

// csvTable reads a CSV with a header into rows addressed by column name.
type csvTable struct {
	cols map[string]int
	rows [][]string
}

func readCSV(op string, r io.Reader, need ...string) (*csvTable, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = false
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: header: %w", op, errors.Join(ErrTrace, err))
	}
	t := &csvTable{cols: map[string]int{}}
	for i, h := range head {
		t.cols[strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))] = i
	}
	for _, n := range need {
		if _, ok := t.cols[n]; !ok {
			return nil, fmt.Errorf("%s: %w: no column %q (have %v)", op, ErrTrace, n, head)
		}
	}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", op, errors.Join(ErrTrace, err))
		}
		if len(t.rows) >= maxTraceRows {
			return nil, fmt.Errorf("%s: %w: more than %d rows", op, ErrTrace, maxTraceRows)
		}
		t.rows = append(t.rows, rec)
	}
	return t, nil
}

func (t *csvTable) get(row []string, col string) string {
	i, ok := t.cols[col]
	if !ok || i >= len(row) {
		return ""
	}
	return strings.TrimSpace(row[i])
}

// sortJobs orders jobs by arrival (stable), rebases arrivals on the first
// and numbers them.
func sortJobs(jobs []Job) []Job {
	slices.SortStableFunc(jobs, func(a, b Job) int { return cmp.Compare(a.ArrivalSec, b.ArrivalSec) })
	if len(jobs) > 0 {
		t0 := jobs[0].ArrivalSec
		for i := range jobs {
			jobs[i].ArrivalSec -= t0
			jobs[i].ID = i
		}
	}
	return jobs
}

// ReadPhilly reads the Philly job log as converted by the Pollux authors
// (columns timestamp "2006-01-02 15:04:05", duration in seconds, num_gpus).
// Jobs may use any model and are silver. Rows with no GPUs or no duration
// are skipped.
func ReadPhilly(r io.Reader) ([]Job, error) {
	const op = "sim.ReadPhilly"
	t, err := readCSV(op, r, "timestamp", "duration", "num_gpus")
	if err != nil {
		return nil, err
	}
	var jobs []Job
	for i, row := range t.rows {
		at, err := time.Parse(time.DateTime, t.get(row, "timestamp"))
		if err != nil {
			return nil, fmt.Errorf("%s: row %d: %w", op, i+2, errors.Join(ErrTrace, err))
		}
		dur, err1 := strconv.ParseFloat(t.get(row, "duration"), 64)
		gpus, err2 := strconv.Atoi(t.get(row, "num_gpus"))
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("%s: row %d: %w", op, i+2, errors.Join(ErrTrace, err))
		}
		if gpus <= 0 || dur < 1 {
			continue
		}
		jobs = append(jobs, Job{ArrivalSec: at.Unix(), DurationSec: int64(dur), GPUs: gpus, Tier: auction.TierSilver})
	}
	return sortJobs(jobs), nil
}

// ReadOpenBPods reads an Alibaba openb pod list (columns num_gpu,
// gpu_spec, qos, creation_time, deletion_time, scheduled_time; times in
// seconds). gpu_spec is a "|"-separated list of openb model names (see
// OpenBModel), empty for any; qos BE is bronze, anything else silver. A
// fractional GPU (gpu_milli < 1000) counts as a whole one. Pods without
// GPUs, never scheduled (Pending) or without a positive run time are
// skipped. Duration is deletion - scheduled.
func ReadOpenBPods(r io.Reader) ([]Job, error) {
	const op = "sim.ReadOpenBPods"
	t, err := readCSV(op, r, "num_gpu", "gpu_spec", "qos", "creation_time", "deletion_time", "scheduled_time")
	if err != nil {
		return nil, err
	}
	var jobs []Job
	for i, row := range t.rows {
		gpus, err := strconv.Atoi(t.get(row, "num_gpu"))
		if err != nil {
			return nil, fmt.Errorf("%s: row %d: %w", op, i+2, errors.Join(ErrTrace, err))
		}
		sched := t.get(row, "scheduled_time")
		if gpus <= 0 || sched == "" {
			continue
		}
		created, err1 := strconv.ParseInt(t.get(row, "creation_time"), 10, 64)
		deleted, err2 := strconv.ParseInt(t.get(row, "deletion_time"), 10, 64)
		started, err3 := strconv.ParseInt(sched, 10, 64)
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, fmt.Errorf("%s: row %d: %w", op, i+2, errors.Join(ErrTrace, err))
		}
		if deleted-started < 1 {
			continue
		}
		j := Job{ArrivalSec: created, DurationSec: deleted - started, GPUs: gpus, Tier: auction.TierSilver}
		if t.get(row, "qos") == "BE" {
			j.Tier = auction.TierBronze
		}
		if spec := t.get(row, "gpu_spec"); spec != "" {
			for _, m := range strings.Split(spec, "|") {
				j.Models = append(j.Models, OpenBModel(m))
			}
		}
		jobs = append(jobs, j)
	}
	return sortJobs(jobs), nil
}

// ReadOpenBNodes reads an openb node list (columns sn, gpu, model);
// nodes without GPUs are skipped.
func ReadOpenBNodes(r io.Reader) ([]Node, error) {
	const op = "sim.ReadOpenBNodes"
	t, err := readCSV(op, r, "sn", "gpu", "model")
	if err != nil {
		return nil, err
	}
	var nodes []Node
	for i, row := range t.rows {
		gpus, err := strconv.Atoi(t.get(row, "gpu"))
		if err != nil {
			return nil, fmt.Errorf("%s: row %d: %w", op, i+2, errors.Join(ErrTrace, err))
		}
		if gpus <= 0 {
			continue
		}
		if gpus > auction.MaxGPUsPerHost {
			return nil, fmt.Errorf("%s: row %d: %w: %d GPUs, at most %d per host", op, i+2, ErrTrace, gpus, auction.MaxGPUsPerHost)
		}
		nodes = append(nodes, Node{Name: t.get(row, "sn"), Model: OpenBModel(t.get(row, "model")), GPUs: gpus})
	}
	return nodes, nil
}

// openbModels maps openb model names to slugs; G1-G3 are undisclosed
// internal types and keep their names.
var openbModels = map[string]string{
	"P100": "p100-16gb", "T4": "t4-16gb", "V100M16": "v100-16gb", "V100M32": "v100-32gb", "A10": "a10-24gb",
}

// OpenBModel is the slug for an openb model name ("V100M32": "v100-32gb";
// unknown names are lower-cased).
func OpenBModel(name string) string {
	if s, ok := openbModels[name]; ok {
		return s
	}
	return strings.ToLower(strings.TrimSpace(name))
}

// ReadPrices reads the FSDL cloud GPU table (columns "GPU Type" like
// "V100 (16 GB)" and "Per-GPU" in USD per hour) into the median per-GPU
// price of each model slug ("v100-16gb"; see PriceSlug).
func ReadPrices(r io.Reader) (PriceTable, error) {
	const op = "sim.ReadPrices"
	t, err := readCSV(op, r, "GPU Type", "Per-GPU")
	if err != nil {
		return nil, err
	}
	by := map[string][]float64{}
	for _, row := range t.rows {
		usd, err := strconv.ParseFloat(strings.TrimPrefix(t.get(row, "Per-GPU"), "$"), 64)
		if err != nil || !(usd > 0) || usd > 1000 {
			continue // a blank or non-numeric price is not an offer
		}
		slug := PriceSlug(t.get(row, "GPU Type"))
		by[slug] = append(by[slug], usd)
	}
	out := PriceTable{}
	for slug, ps := range by {
		slices.Sort(ps)
		out[slug] = uint64(ps[(len(ps)-1)/2] * 1e6)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: %w: no prices", op, ErrTrace)
	}
	return out, nil
}

// PriceSlug turns a price table's GPU name into a slug: "A100 (80 GB)" is
// "a100-80gb", "H100 PCIe (80GB)" is "h100-pcie-80gb", "A10" is "a10".
func PriceSlug(name string) string {
	base, mem, _ := strings.Cut(name, "(")
	s := strings.Join(strings.Fields(strings.ToLower(base)), "-")
	if mem = strings.ToLower(strings.ReplaceAll(strings.TrimSuffix(strings.TrimSpace(mem), ")"), " ", "")); mem != "" {
		s += "-" + mem
	}
	return s
}

// Price is the reference price for a model: the table's entry for the
// slug, else for its family (the slug's first segment, the cheapest entry
// of that family), else the median of the whole table.
func (t PriceTable) Price(model string) uint64 {
	if p, ok := t[model]; ok {
		return p
	}
	family, _, _ := strings.Cut(model, "-")
	var fam, all []uint64
	for slug, p := range t {
		all = append(all, p)
		if slug == family || strings.HasPrefix(slug, family+"-") {
			fam = append(fam, p)
		}
	}
	if len(fam) > 0 {
		return slices.Min(fam)
	}
	if len(all) == 0 {
		return 1_000_000
	}
	slices.Sort(all)
	return all[(len(all)-1)/2]
}

// Window returns limit jobs from offset (limit 0: to the end), with
// arrivals rebased on the first and IDs renumbered.
func Window(jobs []Job, offset, limit int) []Job {
	offset = min(max(offset, 0), len(jobs))
	end := len(jobs)
	if limit > 0 {
		end = min(offset+limit, end)
	}
	return sortJobs(slices.Clone(jobs[offset:end]))
}

// ReadJobs reads a job trace in the named format: "philly" or "openb".
func ReadJobs(format string, r io.Reader) ([]Job, error) {
	switch format {
	case "philly":
		return ReadPhilly(r)
	case "openb":
		return ReadOpenBPods(r)
	}
	return nil, fmt.Errorf("sim.ReadJobs: unknown format %q (philly or openb)", format)
}
