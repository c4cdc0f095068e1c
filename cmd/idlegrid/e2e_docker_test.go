package main_test

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
	"github.com/ipfs/go-cid"
	mh "github.com/multiformats/go-multihash"

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

// needDocker skips t under -short and when no engine answers (unless
// IDLEGRID_REQUIRE_DOCKER=1, where that fails it), and builds the test
// image the first time it is needed.
func needDocker(t *testing.T) *client.Client {
	t.Helper()
	if testing.Short() {
		t.Skip("multi-process docker test")
	}
	dockerOnce.Do(setupDocker)
	if dockerErr != nil {
		if os.Getenv("IDLEGRID_REQUIRE_DOCKER") == "1" {
			t.Fatalf("docker engine required (IDLEGRID_REQUIRE_DOCKER=1) but not reachable: %v", dockerErr)
		}
		t.Skipf("no docker engine: %v", dockerErr)
	}
	if jobImageErr != nil {
		t.Fatalf("building the test image: %v", jobImageErr)
	}
	return dockerCli
}

func setupDocker() {
	dockerCli, dockerErr = client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if dockerErr != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
	_, dockerErr = dockerCli.Ping(pctx)
	pcancel()
	if dockerErr != nil {
		return
	}
	jobImageErr = buildJobImage(ctx)
}

// buildJobImage builds testdata/jobprog static for the engine's
// architecture and packs it FROM scratch through the engine API.
func buildJobImage(ctx context.Context) error {
	ver, err := dockerCli.ServerVersion(ctx)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "idlegrid-e2e-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "jobprog")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", bin, "./testdata/jobprog")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+ver.Arch)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %v\n%s", err, out)
	}
	prog, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range []struct {
		name string
		mode int64
		data []byte
	}{
		{"Dockerfile", 0o644, []byte("FROM scratch\nCOPY jobprog /jobprog\nENTRYPOINT [\"/jobprog\"]\n")},
		{"jobprog", 0o755, prog},
	} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data))}); err != nil {
			return err
		}
		if _, err := tw.Write(f.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	tag := "idlegrid-test/jobprog:" + strings.ToLower(rand.Text())
	resp, err := dockerCli.ImageBuild(ctx, &buf, build.ImageBuildOptions{
		Tags: []string{tag}, Remove: true, ForceRemove: true, Dockerfile: "Dockerfile",
	})
	if err != nil {
		return fmt.Errorf("image build: %w", err)
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	for {
		var msg struct {
			Error string `json:"error"`
		}
		if err := dec.Decode(&msg); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return fmt.Errorf("image build: %w", err)
		}
		if msg.Error != "" {
			return fmt.Errorf("image build: %s", msg.Error)
		}
	}
	jobImageTag = tag
	ins, err := dockerCli.ImageInspect(ctx, tag)
	if err != nil {
		return fmt.Errorf("inspect the built image: %w", err)
	}
	jobImage = "idlegrid-test/jobprog@" + ins.ID
	return nil
}

// jobData is what `jobprog write n` writes to /out/data.bin.
func jobData(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i/251)
	}
	return b
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

// waitOffers waits until the renter hears the RFQ topic's providers and
// sees each provider's offer with docker and a free GPU.
func (d *dockerNet) waitOffers(t *testing.T, ctx context.Context) {
	t.Helper()
	waitFor(t, ctx, "the renter to see every provider's docker offer", d.all, func() (bool, string) {
		st, err := d.renter.client.Status(ctx)
		if err != nil {
			return false, err.Error()
		}
		if n := st.TopicPeers["idlegrid/rfq/1"]; n < len(d.providers) {
			return false, fmt.Sprintf("renter knows %d rfq subscribers", n)
		}
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
	var leases []api.Lease
	if err := tryJSON(d.bin, &leases, "leases", "--json", "--home", p.home); err != nil {
		return api.Lease{}, err
	}
	for _, l := range leases {
		if l.JobID == job {
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

// containers lists the containers of instance (a provider's peer ID), the
// stopped ones too, optionally only lease's.
func containers(t *testing.T, ctx context.Context, cli *client.Client, instance, lease string) []container.Summary {
	t.Helper()
	args := filters.NewArgs(filters.Arg("label", labelManaged+"=true"), filters.Arg("label", labelInstance+"="+instance))
	if lease != "" {
		args.Add("label", labelLease+"="+lease)
	}
	list, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: args})
	if err != nil {
		t.Fatalf("list containers: %v", err)
	}
	return list
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

// purgeInstance force-removes every container labelled with instance.
func purgeInstance(t *testing.T, cli *client.Client, instance string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, c := range containers(t, ctx, cli, instance, "") {
		if err := cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) {
			t.Errorf("remove container %v: %v", c.Names, err)
		}
	}
}

// rawCID is the CIDv1 (raw codec, sha2-256) of data, as outputs are named.
func rawCID(t *testing.T, data []byte) string {
	t.Helper()
	sum, err := mh.Sum(data, mh.SHA2_256, -1)
	if err != nil {
		t.Fatal(err)
	}
	return cid.NewCidV1(cid.Raw, sum).String()
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

// TestProviderKill9DuringDockerJob kills -9 a provider while its container
// runs, then restarts it with the same home:
//
//   - the container survives the daemon, and the restarted provider
//     reattaches to it: the lease runs on and completes, the renter's job
//     completes with the file the workload wrote after the restart, both
//     sides agree on the lease, and a container labelled as the provider's
//     but tracked by no lease (planted while it was down) is removed;
//   - a container removed while the provider is down fails its lease on
//     restart with a reason naming the restart, and the renter's job fails
//     with that reason.
//
// No container is left after either case.
func TestProviderKill9DuringDockerJob(t *testing.T) {
	cli := needDocker(t)
	began := time.Now()
	d := startDockerNet(t, cli, 1, 2)
	prov := d.providers[0]
	t.Logf("network up in %v", time.Since(began).Round(time.Millisecond))
	ctx, cancel := context.WithTimeout(t.Context(), 7*time.Minute)
	defer cancel()

	t.Run("reattach", func(t *testing.T) {
		id := d.submit(t, "e2e-docker-reattach", "1m", "sleep", "20")
		ctr := d.waitRunning(t, ctx, prov, id)

		prov.kill9(t)
		if ins, err := cli.ContainerInspect(ctx, ctr); err != nil || !ins.State.Running {
			t.Fatalf("the container must outlive its provider: %v %+v", err, ins.State)
		}
		orphan := startOrphan(t, ctx, cli, prov.peerID)
		prov.start(t, d.bin)

		// Right after the restart the lease is still alive: running on,
		// or completed if the workload already ended.
		var first api.Lease
		waitFor(t, ctx, "the restarted provider to answer", d.all, func() (bool, string) {
			var err error
			first, err = d.leaseOf(prov, id)
			return err == nil, fmt.Sprint(err)
		})
		if first.State != "running" && first.State != "completed" {
			t.Fatalf("after the restart the provider's lease is %s (%s), want running", first.State, first.Reason)
		}
		t.Logf("after the restart the lease is %s", first.State)
		waitFor(t, ctx, "Reconcile to remove the untracked container", d.all, func() (bool, string) {
			_, err := cli.ContainerInspect(ctx, orphan)
			if cerrdefs.IsNotFound(err) {
				return true, ""
			}
			return false, fmt.Sprintf("untracked container %s still there (%v)", orphan, err)
		})

		j := d.waitJob(t, ctx, id)
		if j.State != "completed" {
			t.Fatalf("job %s: %s", j.State, j.Reason)
		}
		d.checkAgree(t, prov, j, "completed")
		dir := filepath.Join(t.TempDir(), "result")
		if out, err := run(t, d.bin, "job", "result", id, "-o", dir, "--home", d.renter.home); err != nil {
			t.Fatalf("job result: %v\n%s", err, out)
		}
		if done, err := os.ReadFile(filepath.Join(dir, "done.txt")); err != nil || string(done) != "done\n" {
			t.Errorf("done.txt: %q, %v", done, err)
		}
		// The log spans the restart: the engine kept it.
		if logs, err := run(t, d.bin, "job", "logs", id, "--home", d.renter.home); err != nil ||
			!strings.Contains(logs, "sleeping") || !strings.Contains(logs, "done") {
			t.Errorf("job logs: %v\n%s", err, logs)
		}
		if !strings.Contains(prov.log.String(), "reattached") {
			t.Errorf("the provider's log does not say it reattached")
		}
		d.waitNoContainers(t, ctx)
	})
	if t.Failed() {
		return
	}

	t.Run("container gone", func(t *testing.T) {
		d.waitOffers(t, ctx)
		id := d.submit(t, "e2e-docker-gone", "1m", "sleep", "60")
		ctr := d.waitRunning(t, ctx, prov, id)

		prov.kill9(t)
		if err := cli.ContainerRemove(ctx, ctr, container.RemoveOptions{Force: true}); err != nil {
			t.Fatalf("remove the lease's container: %v", err)
		}
		prov.start(t, d.bin)

		j := d.waitJob(t, ctx, id)
		pl := d.checkAgree(t, prov, j, "failed")
		if !strings.Contains(pl.Reason, "restart") {
			t.Errorf("the provider's reason %q does not name the restart", pl.Reason)
		}
		if !strings.Contains(j.Reason, pl.Reason) {
			t.Errorf("the job's reason %q does not carry the lease's %q", j.Reason, pl.Reason)
		}
		t.Logf("job failed: %s", j.Reason)
		d.waitNoContainers(t, ctx)
	})
	t.Logf("total %v", time.Since(began).Round(time.Millisecond))
}

// waitRunning waits until p runs the job's lease and its container runs
// on the engine, and returns the container's ID.
func (d *dockerNet) waitRunning(t *testing.T, ctx context.Context, p *proc, job string) string {
	t.Helper()
	var ctr string
	waitFor(t, ctx, "the lease's container to run", d.all, func() (bool, string) {
		l, err := d.leaseOf(p, job)
		if err != nil {
			return false, err.Error()
		}
		if l.State != "running" {
			return false, fmt.Sprintf("lease %s (%s)", l.State, l.Reason)
		}
		list := containers(t, ctx, d.cli, p.peerID, l.ID)
		if len(list) != 1 || list[0].State != container.StateRunning {
			return false, fmt.Sprintf("lease running, containers %+v", list)
		}
		ctr = list[0].ID
		return true, ""
	})
	return ctr
}

// checkAgree checks that the renter's job and the provider's record hold
// the same single lease, in state, and returns the provider's.
func (d *dockerNet) checkAgree(t *testing.T, p *proc, j api.Job, state string) api.Lease {
	t.Helper()
	if j.State != state {
		t.Fatalf("job %s (%s), want %s", j.State, j.Reason, state)
	}
	if len(j.Leases) != 1 {
		t.Fatalf("job has %d leases, want 1: %+v", len(j.Leases), j.Leases)
	}
	rl := j.Leases[0]
	pl, err := d.leaseOf(p, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if pl.ID != rl.ID || pl.State != state || rl.State != state || pl.Reason != rl.Reason {
		t.Errorf("provider's lease %s %s (%s), renter's %s %s (%s), want both %s",
			pl.ID, pl.State, pl.Reason, rl.ID, rl.State, rl.Reason, state)
	}
	return pl
}

// startOrphan starts a container labelled and named as the docker executor
// of instance would, which no lease tracks, and returns its ID.
func startOrphan(t *testing.T, ctx context.Context, cli *client.Client, instance string) string {
	t.Helper()
	name := "idlegrid-" + strings.ToLower(rand.Text())
	resp, err := cli.ContainerCreate(ctx, &container.Config{
		Image: jobImage[strings.LastIndex(jobImage, "@")+1:],
		Cmd:   []string{"sleep", "600"},
		Labels: map[string]string{
			labelManaged: "true", labelInstance: instance,
			"io.idlegrid.job": "orphan", labelLease: "orphan",
		},
	}, &container.HostConfig{NetworkMode: "none", AutoRemove: false}, nil, nil, name)
	if err != nil {
		t.Fatalf("create the untracked container: %v", err)
	}
	t.Cleanup(func() {
		_ = cli.ContainerRemove(context.Background(), resp.ID, container.RemoveOptions{Force: true})
	})
	if err := cli.ContainerStart(ctx, resp.ID, container.StartOptions{}); err != nil {
		t.Fatalf("start the untracked container: %v", err)
	}
	return resp.ID
}
