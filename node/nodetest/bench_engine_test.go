package nodetest

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
	"github.com/idlegrid/idlegrid/node/executor/docker/dockertest"
)

// benchLabel marks the containers the benchmark makes itself, so that all
// of them are removed at the end whatever happens.
const benchLabel = "io.idlegrid.bench"

// benchEngine is the Docker engine the benchmark runs on, and what it made
// there.
type benchEngine struct {
	cli      *client.Client
	version  string
	instance string // random: names this run's containers
}

// newBenchEngine connects to the engine, or skips b without one.
func newBenchEngine(b *testing.B) *benchEngine {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		b.Skipf("no docker engine: %v", err)
	}
	ctx, cancel := context.WithTimeout(b.Context(), 5*time.Second)
	defer cancel()
	v, err := cli.ServerVersion(ctx)
	if err != nil {
		cli.Close()
		b.Skipf("no docker engine: %v", err)
	}
	if _, err := exec.LookPath("docker"); err != nil {
		cli.Close()
		b.Skipf("no docker CLI for the plain docker run: %v", err)
	}
	b.Cleanup(func() { cli.Close() })
	return &benchEngine{cli: cli, version: v.Version + " " + v.Arch, instance: "bench-" + strings.ToLower(rand.Text())}
}

// buildImage builds the docker executor's test program static and packs it
// FROM scratch (as node/executor/docker's tests do), returning the image
// ID; the image is removed at cleanup.
func (e *benchEngine) buildImage(b *testing.B) string {
	ctx, cancel := context.WithTimeout(b.Context(), 3*time.Minute)
	defer cancel()
	tag, id, err := dockertest.BuildScratchImage(ctx, e.cli, "../executor/docker/testdata/prog", "prog", "idlegrid-test/bench")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		rctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := e.cli.ImageRemove(rctx, tag, image.RemoveOptions{Force: true, PruneChildren: true}); err != nil {
			b.Errorf("remove image %s: %v", tag, err)
		}
	})
	return id
}

// createStart times the engine API's create and start of a container,
// which it then removes (untimed).
func (e *benchEngine) createStart(ctx context.Context, cfg *container.Config, hc *container.HostConfig) (time.Duration, error) {
	t0 := time.Now()
	resp, err := e.cli.ContainerCreate(ctx, cfg, hc, nil, nil, "")
	if err != nil {
		return 0, fmt.Errorf("create: %w", err)
	}
	err = e.cli.ContainerStart(ctx, resp.ID, container.StartOptions{})
	d := time.Since(t0)
	if err != nil {
		_ = e.cli.ContainerRemove(ctx, resp.ID, container.RemoveOptions{Force: true})
		return 0, fmt.Errorf("start: %w", err)
	}
	return d, e.checkRunningAndRemove(ctx, resp.ID)
}

// checkRunningAndRemove checks that a timed container runs, then removes it.
func (e *benchEngine) checkRunningAndRemove(ctx context.Context, id string) error {
	ins, err := e.cli.ContainerInspect(ctx, id)
	if err == nil && !ins.State.Running {
		err = fmt.Errorf("container %.12s is %s, not running", id, ins.State.Status)
	}
	return errors.Join(err, e.cli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true}))
}

func labelFilter(key, value string) filters.Args {
	return filters.NewArgs(filters.Arg("label", key+"="+value))
}

// purge force-removes every container matching f.
func (e *benchEngine) purge(b *testing.B, f filters.Args) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	list, err := e.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		b.Errorf("list containers: %v", err)
		return
	}
	for _, c := range list {
		if err := e.cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true}); err != nil {
			b.Errorf("remove container %s: %v", c.Names, err)
		}
	}
}
