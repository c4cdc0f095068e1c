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
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
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
