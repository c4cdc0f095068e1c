package deploy

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// requireDocker skips with -short, and without a reachable engine except under
// IDLEGRID_REQUIRE_DOCKER=1 (CI), where a missing engine fails the test.
func requireDocker(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: skipping the image build (it compiles idlegrid)")
	}
	err := exec.Command("docker", "info").Run()
	if err == nil {
		return
	}
	if os.Getenv("IDLEGRID_REQUIRE_DOCKER") == "1" {
		t.Fatalf("docker engine required (IDLEGRID_REQUIRE_DOCKER=1) but not reachable: docker info: %v", err)
	}
	t.Skipf("no docker engine (docker info: %v): skipping the image test (IDLEGRID_REQUIRE_DOCKER=1 makes this a failure)", err)
}

// TestDockerImage builds deploy/docker/Dockerfile with make docker-image
// (FROM scratch, so nothing is pulled), runs its version command and
// removes the image.
func TestDockerImage(t *testing.T) {
	requireDocker(t)
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	image := "idlegrid-test/provider:" + hex.EncodeToString(suffix)
	const version = "0.1.0-imagetest+ci"
	t.Cleanup(func() {
		if out, err := exec.Command("docker", "rmi", "-f", image).CombinedOutput(); err != nil {
			t.Errorf("cleanup: docker rmi %s: %v\n%s", image, err, out)
		}
	})
	run(t, "make", "-C", "..", "docker-image", "DIST="+t.TempDir(), "IMAGE="+image, "VERSION="+version)

	if got := strings.TrimSpace(run(t, "docker", "run", "--rm", image, "version")); got != "idlegrid "+version {
		t.Errorf("docker run %s version = %q, want %q", image, got, "idlegrid "+version)
	}
	// The daemon must not run as root in the image: with the Docker socket
	// mounted, root in the container would be root on the host twice over.
	if got := strings.TrimSpace(run(t, "docker", "image", "inspect", "-f", "{{.Config.User}}", image)); got != "65532:65532" {
		t.Errorf("image user %q, want 65532:65532", got)
	}
}
