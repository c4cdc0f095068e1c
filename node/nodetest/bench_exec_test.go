package nodetest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node"
	"github.com/idlegrid/idlegrid/node/executor"
	"github.com/idlegrid/idlegrid/node/executor/docker"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/store"
)

// Execution benchmark parameters.
var (
	execReps   = flag.Int("execbench.reps", 15, "measured rounds of BenchmarkAwardToRunning (each: one run of every variant)")
	execWarmup = flag.Int("execbench.warmup", 1, "rounds run first and not counted")
	dlSize     = flag.Int64("execbench.size", 256<<20, "bytes of output BenchmarkResultDownload transfers")
	dlReps     = flag.Int("execbench.dlreps", 5, "downloads per transport in BenchmarkResultDownload")
)

// BenchmarkAwardToRunning compares how long a countersigned lease takes to
// get its (cached) Docker image running on the provider with a plain
// `docker run -d` of the same image on the same engine, in the same run.
//
// ours: the provider's own record of the lease: from AcceptedMs (the
// moment it countersigned the award, in its signed LeaseAcceptance) to
// WorkStartedMs (recorded when the executor's Start returned and the lease
// became running). In between: the job spec is fetched from the renter
// over /idlegrid/job/1.0.0 and checked against the award, the GPUs are
// marked leased, the docker executor resolves the image, creates the
// hardened container and starts it. mocknet has no latency here, so the
// spec round trip costs only the stack's CPU time.
//
// plain: `docker run -d IMAGE hang` through the CLI (os/exec), timed until
// it returns, when the engine has started the container: what a user
// means by a plain docker run, process start of the CLI included.
// api: the engine API's create + start with default settings, on an
// already-connected client. api_hardened: the same two calls with the very
// Config and HostConfig our executor gave its container (copied from it),
// so that ours - api_hardened is the node's share and api_hardened - api
// the hardening's.
//
// The variants run interleaved, in rotating order, execbench.reps rounds
// after execbench.warmup uncounted ones. Skips without a Docker engine.
//
//	go test ./node/nodetest -run '^$' -bench BenchmarkAwardToRunning -benchtime=1x -timeout 20m
func BenchmarkAwardToRunning(b *testing.B) {
	eng := newBenchEngine(b)
	imageID := eng.buildImage(b)
	ref := "idlegrid-test/x@" + imageID

	var timings stageTimings
	c := New(b, 3, Options{
		Configure: func(i int, cfg *node.Config) {
			if cfg.Role == node.RoleProvider {
				cfg.Provider.Runtimes = []string{"docker"}
				cfg.GPU.Sim.Profiles = []string{"a10", "a10"}
			}
		},
		Executors: func(i int, dir string) []executor.Executor {
			// The node's docker executor as openDocker makes it, wrapped
			// to time its calls.
			def := node.DefaultConfig(node.RoleProvider).Executor
			ex, err := docker.New(docker.Config{
				Dir: filepath.Join(dir, "work", "docker"), Instance: eng.instance,
				MaxLogBytes: int64(def.MaxLogMiB) << 20, AllowRoot: def.DockerAllowRoot, Pull: def.DockerPull,
			}, nil)
			if err != nil {
				b.Fatalf("docker executor: %v", err)
			}
			return []executor.Executor{&timedExecutor{Executor: ex, t: &timings}}
		},
	})
	b.Cleanup(func() { eng.purge(b, labelFilter("io.idlegrid.instance", eng.instance)) })
	ctx, cancel := context.WithTimeout(b.Context(), 15*time.Minute)
	defer cancel()
	if err := c.WaitReady(ctx); err != nil {
		b.Fatal(err)
	}
	renter := c.ByRole(node.RoleRenter)[0].Node
	prov := c.ByRole(node.RoleProvider)[0].Node
	if err := WaitSearchable(ctx, renter, 1); err != nil {
		b.Fatal(err)
	}

	k := 0
	var hardened *container.InspectResponse
	outDir := b.TempDir()
	ours := func() (time.Duration, error) {
		k++
		d, ins, err := runLease(ctx, eng, renter, prov, ref, k, &timings)
		if hardened == nil && ins != nil {
			// The executor's container settings, for api_hardened; its
			// /out goes to a directory of ours.
			hardened = ins
			for i := range hardened.HostConfig.Mounts {
				if hardened.HostConfig.Mounts[i].Target == "/out" {
					hardened.HostConfig.Mounts[i].Source = outDir
				}
			}
			hardened.Config.Labels = map[string]string{benchLabel: eng.instance}
			hardened.Config.Image = imageID
		}
		return d, err
	}
	plain := func() (time.Duration, error) {
		t0 := time.Now()
		out, err := exec.CommandContext(ctx, "docker", "run", "-d", "--label", benchLabel+"="+eng.instance, imageID, "hang").Output()
		d := time.Since(t0)
		if err != nil {
			return 0, fmt.Errorf("docker run: %w", err)
		}
		return d, eng.checkRunningAndRemove(ctx, strings.TrimSpace(string(out)))
	}
	api := func() (time.Duration, error) {
		return eng.createStart(ctx, &container.Config{Image: imageID, Cmd: []string{"hang"}, Labels: map[string]string{benchLabel: eng.instance}}, &container.HostConfig{})
	}
	apiHardened := func() (time.Duration, error) {
		if hardened == nil {
			return 0, errors.New("no container of ours to copy the settings of")
		}
		return eng.createStart(ctx, hardened.Config, hardened.HostConfig)
	}
	b.Cleanup(func() { eng.purge(b, labelFilter(benchLabel, eng.instance)) })

	variants := []struct {
		name string
		run  func() (time.Duration, error)
	}{{"ours", ours}, {"plain", plain}, {"api", api}, {"api_hardened", apiHardened}}
	got := make(map[string][]time.Duration)
	busy0 := cpuBusy()
	for b.Loop() {
		// ours first in the warm-up: api_hardened copies its container.
		for round := range *execWarmup + *execReps {
			for j := range variants {
				v := variants[(round+j)%len(variants)]
				if round < *execWarmup {
					v = variants[j]
				}
				d, err := v.run()
				if err != nil {
					b.Fatalf("round %d, %s: %v", round, v.name, err)
				}
				if round >= *execWarmup {
					got[v.name] = append(got[v.name], d)
				}
			}
		}
	}
	cpu := cpuBusy().since(busy0)
	for _, ds := range got {
		slices.Sort(ds)
	}
	p50 := func(name string) time.Duration { return percentile(got[name], 0.5) }
	for _, v := range variants {
		b.ReportMetric(ms(p50(v.name)), v.name+"_p50_ms")
		b.ReportMetric(ms(percentile(got[v.name], 0.9)), v.name+"_p90_ms")
		b.Logf("%s ms: %v", v.name, msFloats(got[v.name]))
	}
	b.ReportMetric(float64(p50("ours"))/float64(p50("plain")), "ratio")
	b.ReportMetric(float64(p50("ours"))/float64(p50("api")), "ratio_api")
	b.ReportMetric(float64(p50("ours"))/float64(p50("api_hardened")), "ratio_api_hardened")
	// Where ours goes, counted rounds only.
	toPrepare, create, start := timings.split(*execWarmup)
	b.ReportMetric(ms(percentile(toPrepare, 0.5)), "ours_to_prepare_p50_ms")
	b.ReportMetric(ms(percentile(create, 0.5)), "ours_prepare_p50_ms")
	b.ReportMetric(ms(percentile(start, 0.5)), "ours_start_p50_ms")
	b.ReportMetric(cpu, "cpu_busy")
	b.Logf("%d rounds after %d warm-up; docker engine %s", *execReps, *execWarmup, eng.version)
}

// runLease posts job k (the image, running "hang") and waits until the
// provider runs it; it returns the provider's AcceptedMs → WorkStartedMs
// and the container's settings, then cancels the job and waits until the
// provider removed the container and freed the GPU.
func runLease(ctx context.Context, eng *benchEngine, renter, prov *node.Node, ref string, k int, timings *stageTimings) (time.Duration, *container.InspectResponse, error) {
	spec := fmt.Sprintf("name: a2r-%03d\nimage: %s\ncommand: [\"/prog\", \"hang\"]\ngpus: 1\ngpu: [a10]\ntier: silver\nmax_price: 5\nduration: 10m\nbid_window: 3s\n", k, ref)
	j, err := renter.Renter().Submit([]byte(spec))
	if err != nil {
		return 0, nil, err
	}
	id := j.ID
	var l *store.Lease
	err = WaitFor(ctx, "job "+j.Name+" running on the provider", func() bool {
		if j, err = renter.Store().GetJob(id); err != nil {
			return false
		}
		if j.State != lease.JobAuctioning && j.State != lease.JobRunning {
			return true // l stays nil: failed
		}
		if len(j.Leases) == 0 {
			return false
		}
		ls, _ := prov.Store().Leases()
		for _, x := range ls {
			if x.ID == j.Leases[0] && x.State != lease.Awarded && x.State != lease.Preparing {
				l = x
				return true
			}
		}
		return false
	})
	if err == nil && l == nil {
		err = fmt.Errorf("job %s: %s", j.State, j.Reason)
	}
	if err != nil {
		return 0, nil, err
	}
	if l.State != lease.Running {
		return 0, nil, fmt.Errorf("lease %s: %s", l.State, l.Reason)
	}
	acc, _, err := auction.OpenLeaseAcceptance(l.Acceptance)
	if err != nil {
		return 0, nil, err
	}
	if acc.StartsAtMs != acc.AcceptedMs {
		return 0, nil, fmt.Errorf("lease starts %d ms after its acceptance (preemption notice?)", acc.StartsAtMs-acc.AcceptedMs)
	}
	d := time.Duration(l.WorkStartedMs-acc.AcceptedMs) * time.Millisecond
	timings.accepted(l.ID, time.UnixMilli(acc.AcceptedMs))
	ins, err := eng.cli.ContainerInspect(ctx, l.Handle)
	if err != nil {
		return 0, nil, fmt.Errorf("inspect the lease's container: %w", err)
	}
	if !ins.State.Running {
		return 0, nil, fmt.Errorf("the lease's container is %s", ins.State.Status)
	}
	if _, err := renter.Renter().Cancel(ctx, id); err != nil {
		return 0, nil, err
	}
	err = WaitFor(ctx, "the lease's end on the provider", func() bool {
		ls, _ := prov.Store().Leases()
		for _, x := range ls {
			if x.ID == l.ID {
				cp := prov.Provider().Capacity()
				return x.State == lease.Cancelled && cp != nil && cp.FreeGPUs() == 2
			}
		}
		return false
	})
	return d, &ins, err
}

// timedExecutor is the docker executor with its Prepare and Start timed,
// per lease.
type timedExecutor struct {
	*docker.Executor
	t *stageTimings
}

func (e *timedExecutor) Prepare(ctx context.Context, spec executor.Spec) (executor.Handle, error) {
	t0 := time.Now()
	h, err := e.Executor.Prepare(ctx, spec)
	e.t.add(stageTiming{lease: spec.LeaseID, handle: h, prepareAt: t0, prepared: time.Since(t0)})
	return h, err
}

func (e *timedExecutor) Start(ctx context.Context, h executor.Handle) error {
	t0 := time.Now()
	err := e.Executor.Start(ctx, h)
	e.t.started(h, time.Since(t0))
	return err
}

type stageTiming struct {
	lease     string
	handle    executor.Handle
	prepareAt time.Time
	prepared  time.Duration
	start     time.Duration
}

// stageTimings are the executor calls of every lease, in order, with the
// lease acceptance times the benchmark reads back.
type stageTimings struct {
	mu  sync.Mutex
	all []stageTiming
	acc map[string]time.Time
}

func (s *stageTimings) add(t stageTiming) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.all = append(s.all, t)
}

func (s *stageTimings) accepted(lease string, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.acc == nil {
		s.acc = map[string]time.Time{}
	}
	s.acc[lease] = at
}

func (s *stageTimings) started(h executor.Handle, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.all {
		if s.all[i].handle == h {
			s.all[i].start = d
		}
	}
}

// split returns, sorted, for the leases after the first skip: Prepare
// called minus the acceptance (the node's part before the executor, at ms
// resolution of the acceptance), Prepare's and Start's durations.
func (s *stageTimings) split(skip int) (toPrepare, prepare, start []time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, t := range s.all {
		if i < skip {
			continue
		}
		if at, ok := s.acc[t.lease]; ok {
			toPrepare = append(toPrepare, t.prepareAt.Sub(at))
		}
		prepare = append(prepare, t.prepared)
		start = append(start, t.start)
	}
	for _, ds := range [][]time.Duration{toPrepare, prepare, start} {
		slices.Sort(ds)
	}
	return toPrepare, prepare, start
}

func msFloats(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = float64(d.Microseconds()) / 1000
	}
	return out
}
