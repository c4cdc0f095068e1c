package devnet

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"

	"github.com/idlegrid/idlegrid/node/executor/docker"
)

// The devnet's demo service is an image built here, FROM scratch, around
// the idlegrid binary itself: its hidden `devnet-hello` command is a tiny
// HTTP server. Nothing is pulled, so the README's service example runs
// with no registry and no network. A binary built with cgo (for NVML)
// needs its ELF interpreter and libraries, which go into the image beside
// it; a static one needs nothing.

// HelloRepo is the demo image's repository; its "latest" tag is the image
// of the binary that ran the devnet last.
const HelloRepo = "idlegrid-devnet/hello"

// HelloPort is the container port the demo server listens on.
const HelloPort = 8080

// DockerDemo readies a devnet's Docker providers: it checks that an engine
// answers (DOCKER_HOST, else the local socket) and builds the demo image
// from exe. It returns the engine's address and the image's pinned
// reference; an error wrapping docker.ErrNoEngine means no engine.
func DockerDemo(ctx context.Context, exe string) (host, image string, err error) {
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	cli, err := docker.Dial(dctx, "")
	if err != nil {
		return "", "", err
	}
	defer cli.Close()
	image, err = BuildHelloImage(ctx, cli, exe)
	return cli.DaemonHost(), image, err
}

// BuildHelloImage builds (or finds, when this binary built it before) the
// demo service image from the executable exe, tags it HelloRepo:latest
// and returns its pinned reference, HelloRepo@sha256:<image ID>.
func BuildHelloImage(ctx context.Context, cli *client.Client, exe string) (string, error) {
	return buildSelfImage(ctx, cli, exe, helloImage)
}

// selfImage is one of the devnet's images around this binary: the
// repository, the io.idlegrid.devnet label that marks its builds, and the
// hidden command it runs on port.
type selfImage struct {
	repo, label string
	command     []string
	port        int
}

var helloImage = selfImage{repo: HelloRepo, label: "hello", command: []string{"devnet-hello", "--listen", fmt.Sprintf(":%d", HelloPort)}, port: HelloPort}

// buildSelfImage builds (or finds) im from exe, tags it latest and
// returns its pinned reference, repo@sha256:<image ID>.
func buildSelfImage(ctx context.Context, cli *client.Client, exe string, im selfImage) (string, error) {
	what := "devnet: " + im.label + " image"
	bin, err := os.ReadFile(exe)
	if err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	sum := sha256.Sum256(bin)
	tag := im.repo + ":" + hex.EncodeToString(sum[:6])
	if ins, err := cli.ImageInspect(ctx, tag); err == nil {
		if err := cli.ImageTag(ctx, tag, im.repo+":latest"); err != nil {
			return "", fmt.Errorf("%s: tag: %w", what, err)
		}
		return im.repo + "@" + ins.ID, nil
	}
	files, err := rootFS(exe, bin)
	if err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	// The context streams: the binary is tens of MB.
	buildCtx, pw := io.Pipe()
	go func() { pw.CloseWithError(writeBuildContext(pw, files, im)) }()
	defer buildCtx.Close()
	resp, err := cli.ImageBuild(ctx, buildCtx, build.ImageBuildOptions{
		Tags: []string{tag, im.repo + ":latest"}, Remove: true, ForceRemove: true, Dockerfile: "Dockerfile",
		Labels: map[string]string{"io.idlegrid.devnet": im.label},
	})
	if err != nil {
		return "", fmt.Errorf("%s: build: %w", what, err)
	}
	defer resp.Body.Close()
	if err := buildErrors(resp.Body); err != nil {
		return "", fmt.Errorf("%s: build: %w", what, err)
	}
	ins, err := cli.ImageInspect(ctx, tag)
	if err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	removeOldBuilds(ctx, cli, im.label, ins.ID)
	return im.repo + "@" + ins.ID, nil
}

// removeOldBuilds removes the images with label built from earlier
// binaries, so each rebuild does not leave one behind. Best effort: an
// image a container still uses (another devnet's) stays.
func removeOldBuilds(ctx context.Context, cli *client.Client, label, keep string) {
	old, err := cli.ImageList(ctx, image.ListOptions{Filters: filters.NewArgs(filters.Arg("label", "io.idlegrid.devnet="+label))})
	if err != nil {
		return
	}
	for _, im := range old {
		if im.ID != keep {
			_, _ = cli.ImageRemove(ctx, im.ID, image.RemoveOptions{PruneChildren: true})
		}
	}
}

// rootFS maps each file of the image (absolute paths) to its contents:
// the binary as /idlegrid and, for a dynamically linked one, its ELF
// interpreter and the libraries it needs, where the host's loader finds
// them.
func rootFS(exe string, bin []byte) (map[string][]byte, error) {
	files := map[string][]byte{"/idlegrid": bin}
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		return nil, fmt.Errorf("%s is not a Linux executable: %w", exe, err)
	}
	defer f.Close()
	interp := interpreter(f)
	if interp == "" {
		return files, nil // static
	}
	if files[interp], err = os.ReadFile(interp); err != nil {
		return nil, fmt.Errorf("ELF interpreter: %w", err)
	}
	dirs := libDirs(interp)
	queue, err := f.ImportedLibraries()
	if err != nil {
		return nil, fmt.Errorf("libraries of %s: %w", exe, err)
	}
	seen := map[string]bool{filepath.Base(interp): true}
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		if seen[name] {
			continue
		}
		seen[name] = true
		p, data, err := findLib(name, dirs)
		if err != nil {
			return nil, err
		}
		files[p] = data
		if lf, err := elf.NewFile(bytes.NewReader(data)); err == nil {
			more, _ := lf.ImportedLibraries()
			queue = append(queue, more...)
			lf.Close()
		}
	}
	return files, nil
}

// interpreter is the program's PT_INTERP, empty for a static binary.
func interpreter(f *elf.File) string {
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b, err := io.ReadAll(p.Open())
			if err != nil {
				return ""
			}
			return strings.TrimRight(string(b), "\x00")
		}
	}
	return ""
}

// libDirs are the directories a glibc or musl loader searches by default,
// the interpreter's own first.
func libDirs(interp string) []string {
	triplet := map[string]string{"amd64": "x86_64-linux-gnu", "arm64": "aarch64-linux-gnu"}[runtime.GOARCH]
	dirs := []string{filepath.Dir(interp)}
	if triplet != "" {
		dirs = append(dirs, "/lib/"+triplet, "/usr/lib/"+triplet)
	}
	dirs = append(dirs, "/lib64", "/usr/lib64", "/lib", "/usr/lib")
	return slices.Compact(dirs)
}

func findLib(name string, dirs []string) (string, []byte, error) {
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if data, err := os.ReadFile(p); err == nil {
			return p, data, nil
		}
	}
	return "", nil, fmt.Errorf("library %s not found in %s", name, strings.Join(dirs, ", "))
}

// writeBuildContext writes im's build context: the Dockerfile and rootfs/.
func writeBuildContext(w io.Writer, files map[string][]byte, im selfImage) error {
	var libPath []string
	for p := range files {
		if d := path.Dir(p); p != "/idlegrid" && !slices.Contains(libPath, d) {
			libPath = append(libPath, d)
		}
	}
	slices.Sort(libPath)
	dockerfile := "FROM scratch\nCOPY rootfs/ /\n"
	if len(libPath) > 0 {
		dockerfile += "ENV LD_LIBRARY_PATH=" + strings.Join(libPath, ":") + "\n"
	}
	entrypoint, err := json.Marshal(append([]string{"/idlegrid"}, im.command...))
	if err != nil {
		return err
	}
	dockerfile += fmt.Sprintf("USER 65534:65534\nEXPOSE %d/tcp\nENTRYPOINT %s\n", im.port, entrypoint)

	tw := tar.NewWriter(w)
	write := func(name string, mode int64, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: mode, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	if err := write("Dockerfile", 0o644, []byte(dockerfile)); err != nil {
		return err
	}
	names := make([]string, 0, len(files))
	for p := range files {
		names = append(names, p)
	}
	slices.Sort(names)
	made := map[string]bool{}
	for _, p := range names {
		// Parent directories first, so the layer has them with sane modes.
		var parents []string
		for d := path.Dir(p); d != "/" && !made[d]; d = path.Dir(d) {
			parents = append(parents, d)
			made[d] = true
		}
		slices.Reverse(parents)
		for _, d := range parents {
			if err := tw.WriteHeader(&tar.Header{Name: "rootfs" + d + "/", Mode: 0o755, Typeflag: tar.TypeDir}); err != nil {
				return err
			}
		}
		if err := write("rootfs"+p, 0o755, files[p]); err != nil {
			return err
		}
	}
	return tw.Close()
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
			return err
		}
		if msg.Error != "" {
			return errors.New(msg.Error)
		}
	}
}
