package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"

	"github.com/idlegrid/idlegrid/node/api"
	apiclient "github.com/idlegrid/idlegrid/node/api/client"
)

// The Docker end-to-end tests run the real binary against the local Docker
// engine with a test image built FROM scratch (testdata/jobprog), once per
// test run and removed at the end. Other packages' tests may share the
// engine, so the image tag is random and containers are told apart by the
// providers' peer IDs (io.idlegrid.instance).

// Labels the docker executor puts on its containers
// (node/executor/docker/container.go).
const (
	labelManaged  = "io.idlegrid.managed"
	labelInstance = "io.idlegrid.instance"
	labelLease    = "io.idlegrid.lease"
)

var (
	dockerOnce  sync.Once
	dockerCli   *client.Client
	dockerErr   error  // no engine: tests skip (or fail, IDLEGRID_REQUIRE_DOCKER=1)
	jobImage    string // idlegrid-test/jobprog@sha256:<image ID>
	jobImageTag string // removed by TestMain
	jobImageErr error  // an engine but no image: tests fail
)

func TestMain(m *testing.M) {
	code := m.Run()
	if jobImageTag != "" {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if _, err := dockerCli.ImageRemove(ctx, jobImageTag, image.RemoveOptions{PruneChildren: true}); err != nil {
			fmt.Fprintln(os.Stderr, "removing the test image:", err)
		}
		cancel()
	}
	if dockerCli != nil {
		dockerCli.Close()
	}
	os.Exit(code)
}

// dockerNet is a network of real daemons whose providers offer docker.
type dockerNet struct {
	bin       string
	boot      *proc
	providers []*proc
	renter    *proc
	all       []*proc
	cli       *client.Client
}

// startDockerNet starts 1 bootstrap, n providers (simulated T4s, docker
// only, silver floors 1.00, 1.50, ... USD) and 1 renter, and waits until the
// renter sees every provider's docker offer. Every container of the
// providers is removed at cleanup, after the daemons stop, and the logs are
// printed if the test failed.
func startDockerNet(t *testing.T, cli *client.Client, n int, gpus int, extra ...string) *dockerNet {
	t.Helper()
	d := &dockerNet{bin: buildBinary(t), cli: cli}
	root := t.TempDir()
	add := func(name, role string) *proc {
		p := initProc(t, d.bin, root, name, role)
		d.all = append(d.all, p)
		return p
	}
	d.boot = add("bootstrap", "bootstrap")
	for i := range n {
		d.providers = append(d.providers, add(fmt.Sprintf("provider-%d", i+1), "provider"))
	}
	d.renter = add("renter", "renter")

	// Cleanups run last first: the daemons stop, then their containers go.
	t.Cleanup(func() {
		for _, p := range d.providers {
			purgeInstance(t, cli, p.peerID)
		}
	})
	t.Cleanup(func() {
		if t.Failed() {
			for _, p := range d.all {
				if p.log != nil {
					t.Logf("--- log of %s ---\n%s", p.name, tail(p.log.String(), 6000))
				}
			}
		}
	})

	bootAddr := fmt.Sprintf("/ip4/127.0.0.1/tcp/%d/p2p/%s", d.boot.p2pPort, d.boot.peerID)
	profiles := strings.TrimSuffix(strings.Repeat("t4,", gpus), ",")
	for i, p := range d.all {
		p.args = []string{
			"--listen", fmt.Sprintf("/ip4/127.0.0.1/tcp/%d,/ip4/127.0.0.1/udp/%d/quic-v1", p.p2pPort, p.p2pPort),
			"--api-listen", fmt.Sprintf("127.0.0.1:%d", p.apiPort),
			"--set", "p2p.nat=false",
			"--set", "api.debug=true",
			"--set", "p2p.reconnect_min=200ms",
			"--set", "p2p.reconnect_max=2s",
			"--set", "p2p.gossip_heartbeat=200ms",
			"--set", "p2p.conn_grace=0s",
			"--set", "market.refresh=2s",
			"--log-level", "debug",
		}
		p.args = append(p.args, extra...)
		if slices.Contains(d.providers, p) {
			p.args = append(p.args,
				"--set", "gpu.backend=sim",
				"--set", "gpu.sim.profiles="+profiles,
				"--set", fmt.Sprintf("gpu.sim.seed=%d", i),
				"--set", "provider.runtimes=docker",
				"--set", fmt.Sprintf("provider.floor_usd.silver=%.2f", 1+0.5*float64(i-1)),
				"--set", "executor.stop_grace=2s",
			)
		}
		if p == d.renter {
			// The kill -9 tests restart a provider with reattachable
			// containers; on a loaded machine the restart can outlast the
			// default 10 s of silence a renter allows.
			p.args = append(p.args, "--set", "market.provider_timeout=40s")
		}
		if p != d.boot {
			p.args = append(p.args, "--bootstrap", bootAddr)
		}
		token, err := os.ReadFile(filepath.Join(p.home, "api.token"))
		if err != nil {
			t.Fatal(err)
		}
		p.client = apiclient.New(fmt.Sprintf("http://127.0.0.1:%d", p.apiPort), strings.TrimSpace(string(token)))
		p.start(t, d.bin)
		t.Cleanup(p.stop)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	waitAllConnected(t, ctx, d.all)
	d.waitOffers(t, ctx)
	return d
}

// waitOffers waits until the renter
// sees each provider's offer with docker and a free GPU.
func (d *dockerNet) waitOffers(t *testing.T, ctx context.Context) {
	t.Helper()
	waitFor(t, ctx, "the renter to see every provider's docker offer", d.all, func() (bool, string) {
		res, err := d.renter.client.Search(ctx, "", apiclient.SearchOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, p := range d.providers {
			i := slices.IndexFunc(res.Offers, func(o api.Offer) bool { return o.PeerID == p.peerID })
			if i < 0 {
				return false, "no offer from " + p.name
			}
			if o := res.Offers[i]; !slices.Contains(o.Runtimes, "docker") || o.FreeGPUs < 1 {
				return false, fmt.Sprintf("%s offers runtimes %v with %d free GPUs", p.name, o.Runtimes, o.FreeGPUs)
			}
		}
		return true, ""
	})
}

// submit posts a docker job running the test image with args and returns
// its ID.
func (d *dockerNet) submit(t *testing.T, name, duration string, args ...string) string {
	t.Helper()
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = fmt.Sprintf("%q", a)
	}
	spec := fmt.Sprintf(`name: %s
image: %s
command: ["/jobprog", %s]
gpus: 1
gpu: [t4]
tier: silver
max_price: 5
duration: %s
bid_window: 2s
`, name, jobImage, strings.Join(quoted, ", "), duration)
	file := filepath.Join(t.TempDir(), "job.yaml")
	if err := os.WriteFile(file, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	var job api.Job
	runJSON(t, d.bin, &job, "job", "submit", "-f", file, "--home", d.renter.home, "--detach", "--json")
	if job.ID == "" {
		t.Fatalf("job submit returned no job ID")
	}
	t.Logf("submitted %s: job %s (%s)", name, job.ID, strings.Join(args, " "))
	return job.ID
}

// runJSON runs the binary and decodes its standard output into v.
func runJSON(t *testing.T, bin string, v any, args ...string) {
	t.Helper()
	if err := tryJSON(bin, v, args...); err != nil {
		t.Fatal(err)
	}
}

func tryJSON(bin string, v any, args ...string) error {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("idlegrid %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	if err := json.Unmarshal(stdout.Bytes(), v); err != nil {
		return fmt.Errorf("idlegrid %s: %v\n%s", strings.Join(args, " "), err, stdout.String())
	}
	return nil
}

// job is the renter's view of a job (`job status --json`).
func (d *dockerNet) job(id string) (api.Job, error) {
	var j api.Job
	err := tryJSON(d.bin, &j, "job", "status", id, "--json", "--home", d.renter.home)
	return j, err
}

// waitJob waits until the job ends and returns it.
func (d *dockerNet) waitJob(t *testing.T, ctx context.Context, id string) api.Job {
	t.Helper()
	var j api.Job
	waitFor(t, ctx, "job "+id+" to end", d.all, func() (bool, string) {
		var err error
		if j, err = d.job(id); err != nil {
			return false, err.Error()
		}
		return j.Terminal(), fmt.Sprintf("job %s: %s", j.State, j.Reason)
	})
	return j
}

// leaseOf returns p's view of the lease of job (`leases --json`).
func (d *dockerNet) leaseOf(p *proc, job string) (api.Lease, error) {
	var leases, renters []api.Lease
	if err := tryJSON(d.bin, &leases, "leases", "--json", "--home", p.home); err != nil {
		return api.Lease{}, err
	}
	// A provider's copy knows the spec, not the renter's job ID (each
	// submit is a new job); the lease ID is the same on both sides.
	ids := map[string]bool{}
	if err := tryJSON(d.bin, &renters, "leases", "--json", "--home", d.renter.home); err == nil {
		for _, l := range renters {
			if l.JobID == job {
				ids[l.ID] = true
			}
		}
	}
	for _, l := range leases {
		if l.JobID == job || ids[l.ID] {
			return l, nil
		}
	}
	return api.Lease{}, fmt.Errorf("%s has no lease of job %s", p.name, job)
}

// winner returns the provider holding the job's lease once the renter has
// one.
func (d *dockerNet) winner(t *testing.T, ctx context.Context, job string) (*proc, string) {
	t.Helper()
	var p *proc
	var lease string
	waitFor(t, ctx, "job "+job+" to be leased", d.all, func() (bool, string) {
		j, err := d.job(job)
		if err != nil {
			return false, err.Error()
		}
		if len(j.Leases) == 0 {
			return false, fmt.Sprintf("job %s, no lease yet (%s)", j.State, j.Reason)
		}
		l := j.Leases[len(j.Leases)-1]
		i := slices.IndexFunc(d.providers, func(p *proc) bool { return p.peerID == l.Provider })
		if i < 0 {
			t.Fatalf("job %s leased from %s, not one of the providers", job, l.Provider)
		}
		p, lease = d.providers[i], l.ID
		return true, ""
	})
	return p, lease
}

// waitNoContainers waits until no provider of d has a container left on
// the engine (the executor removes a workload after its lease ends), and
// until no work directory is left on the providers.
func (d *dockerNet) waitNoContainers(t *testing.T, ctx context.Context) {
	t.Helper()
	waitFor(t, ctx, "no container of the providers left", d.all, func() (bool, string) {
		for _, p := range d.providers {
			if list := containers(t, ctx, d.cli, p.peerID, ""); len(list) > 0 {
				return false, fmt.Sprintf("%s has %d containers, first %v %s", p.name, len(list), list[0].Names, list[0].State)
			}
			entries, _ := os.ReadDir(filepath.Join(p.home, "work", "docker"))
			for _, e := range entries {
				if strings.HasPrefix(e.Name(), "idlegrid-") {
					return false, fmt.Sprintf("%s still has work directory %s", p.name, e.Name())
				}
			}
		}
		return true, ""
	})
}

// TestDockerJobEndToEnd runs a docker job through the whole market with
// the real binary: 1 bootstrap, 3 providers offering docker on the local
// engine and 1 renter. The renter's job writes a 3 MB file; the test reads
// the log, downloads the result both unpacked and as a tar, checks the
// bytes and the tar's CID against the lease's output CID on both sides, and
// checks that no container is left.
func TestDockerJobEndToEnd(t *testing.T) {
	cli := needDocker(t)
	began := time.Now()
	d := startDockerNet(t, cli, 3, 1)
	t.Logf("network up in %v", time.Since(began).Round(time.Millisecond))
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()

	const size = 3_000_000
	id := d.submit(t, "e2e-docker-write", "1m", "write", fmt.Sprint(size))
	prov, leaseID := d.winner(t, ctx, id)
	t.Logf("lease %s on %s", leaseID, prov.name)
	j := d.waitJob(t, ctx, id)
	if j.State != "completed" {
		t.Fatalf("job %s: %s", j.State, j.Reason)
	}
	t.Logf("job completed %v after submission", time.Since(j.CreatedAt).Round(time.Millisecond))
	if len(j.Leases) != 1 {
		t.Fatalf("job has %d leases, want 1: %+v", len(j.Leases), j.Leases)
	}
	rl := j.Leases[0]
	if rl.State != "completed" || rl.Runtime != "docker" || rl.ExitCode == nil || *rl.ExitCode != 0 || rl.OutputCID == "" {
		t.Fatalf("renter's lease: %+v", rl)
	}
	pl, err := d.leaseOf(prov, id)
	if err != nil {
		t.Fatal(err)
	}
	if pl.ID != rl.ID || pl.State != "completed" || pl.OutputCID != rl.OutputCID || pl.OutputSize != rl.OutputSize {
		t.Errorf("provider's lease %+v\ndiffers from the renter's %+v", pl, rl)
	}

	// The log, fetched from the provider.
	logs, err := run(t, d.bin, "job", "logs", id, "--home", d.renter.home)
	if err != nil {
		t.Fatalf("job logs: %v\n%s", err, logs)
	}
	want := jobData(size)
	for _, line := range []string{
		"progress 1/4: 750000 bytes", "progress 4/4: 3000000 bytes",
		fmt.Sprintf("wrote bytes=%d sha256=", size),
	} {
		if !strings.Contains(logs, line) {
			t.Errorf("job logs lack %q:\n%s", line, logs)
		}
	}

	// The outputs, unpacked.
	dir := filepath.Join(t.TempDir(), "result")
	out, err := run(t, d.bin, "job", "result", id, "-o", dir, "--home", d.renter.home)
	if err != nil {
		t.Fatalf("job result: %v\n%s", err, out)
	}
	got, err := os.ReadFile(filepath.Join(dir, "data.bin"))
	if err != nil {
		t.Fatalf("%v\njob result said:\n%s", err, out)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("data.bin: %d bytes, differs from the expected %d bytes", len(got), len(want))
	}
	if summary, err := os.ReadFile(filepath.Join(dir, "summary.txt")); err != nil || !strings.HasPrefix(string(summary), fmt.Sprintf("bytes=%d sha256=", size)) {
		t.Errorf("summary.txt: %q, %v", summary, err)
	}

	// The outputs as the tar the provider recorded.
	tarPath := filepath.Join(t.TempDir(), "out.tar")
	if out, err := run(t, d.bin, "job", "result", id, "--tar", tarPath, "--home", d.renter.home); err != nil {
		t.Fatalf("job result --tar: %v\n%s", err, out)
	}
	raw, err := os.ReadFile(tarPath)
	if err != nil {
		t.Fatal(err)
	}
	if c := rawCID(t, raw); c != rl.OutputCID || int64(len(raw)) != rl.OutputSize {
		t.Errorf("tar: %s (%d bytes), lease output: %s (%d bytes)", c, len(raw), rl.OutputCID, rl.OutputSize)
	}

	d.waitNoContainers(t, ctx)
	t.Logf("total %v", time.Since(began).Round(time.Millisecond))
}
