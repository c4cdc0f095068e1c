package main_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"

	"github.com/idlegrid/idlegrid/node/api"
)

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
