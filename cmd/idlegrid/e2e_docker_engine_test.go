package main_test

import (
	"context"
	"os"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
	"github.com/idlegrid/idlegrid/node/executor/docker/dockertest"
	"github.com/ipfs/go-cid"
	mh "github.com/multiformats/go-multihash"
)

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

// buildJobImage builds testdata/jobprog into a FROM-scratch image.
func buildJobImage(ctx context.Context) error {
	tag, id, err := dockertest.BuildScratchImage(ctx, dockerCli, "./testdata/jobprog", "jobprog", "idlegrid-test/jobprog")
	if err != nil {
		return err
	}
	jobImageTag, jobImage = tag, "idlegrid-test/jobprog@"+id
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
