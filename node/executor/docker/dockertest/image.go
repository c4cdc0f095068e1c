// Package dockertest builds the test images the Docker tests run: a Go
// program compiled static for the engine's architecture and packed FROM
// scratch through the engine API, so no registry is needed (CI has none).
package dockertest

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

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/client"
)

// BuildScratchImage compiles the Go package at pkgDir (a path the go
// command understands from the working directory, such as
// ./testdata/prog) into /name of a FROM-scratch image with it as the
// entrypoint, tagged repo:<random>. It returns the tag and the image ID;
// removing the image is the caller's.
func BuildScratchImage(ctx context.Context, cli *client.Client, pkgDir, name, repo string) (tag, id string, err error) {
	ver, err := cli.ServerVersion(ctx)
	if err != nil {
		return "", "", fmt.Errorf("dockertest: engine version: %w", err)
	}
	tmp, err := os.MkdirTemp("", "idlegrid-test-image-")
	if err != nil {
		return "", "", err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, name)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", bin, pkgDir)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+ver.Arch)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("dockertest: go build %s: %v\n%s", pkgDir, err, out)
	}
	prog, err := os.ReadFile(bin)
	if err != nil {
		return "", "", err
	}
	buildCtx, err := scratchContext(name, prog)
	if err != nil {
		return "", "", err
	}
	tag = repo + ":" + strings.ToLower(rand.Text())
	resp, err := cli.ImageBuild(ctx, buildCtx, build.ImageBuildOptions{
		Tags: []string{tag}, Remove: true, ForceRemove: true, Dockerfile: "Dockerfile",
	})
	if err != nil {
		return "", "", fmt.Errorf("dockertest: image build: %w", err)
	}
	defer resp.Body.Close()
	if err := buildErrors(resp.Body); err != nil {
		return "", "", err
	}
	ins, err := cli.ImageInspect(ctx, tag)
	if err != nil {
		return "", "", fmt.Errorf("dockertest: inspect the built image: %w", err)
	}
	return tag, ins.ID, nil
}

// scratchContext is the build context: a Dockerfile and the program.
func scratchContext(name string, prog []byte) (io.Reader, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dockerfile := fmt.Sprintf("FROM scratch\nCOPY %s /%s\nENTRYPOINT [\"/%s\"]\n", name, name, name)
	for _, f := range []struct {
		name string
		mode int64
		data []byte
	}{{"Dockerfile", 0o644, []byte(dockerfile)}, {name, 0o755, prog}} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data))}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return &buf, nil
}

// buildErrors reads the engine's build stream to its end and returns the
// first error it reports.
func buildErrors(r io.Reader) error {
	dec := json.NewDecoder(r)
	for {
		var msg struct {
			Error string `json:"error"`
		}
		if err := dec.Decode(&msg); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("dockertest: image build: %w", err)
		}
		if msg.Error != "" {
			return fmt.Errorf("dockertest: image build: %s", msg.Error)
		}
	}
}
