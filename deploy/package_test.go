package deploy

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// The version make package stamps into the binary and the package in
// TestPackageInstalls; semver's prerelease becomes "~" for dpkg.
const (
	testVersion    = "0.1.0-pkgtest+ci"
	testDebVersion = "0.1.0~pkgtest+ci-1"
)

// requirePackageTest skips unless IDLEGRID_REQUIRE_PACKAGE=1 (CI sets it):
// the test installs a package system-wide and creates a system user, which
// no developer machine should get from a plain go test. Set, it fails
// where it cannot run (not root, no dpkg, an idlegrid already installed).
func requirePackageTest(t *testing.T) {
	t.Helper()
	if os.Getenv("IDLEGRID_REQUIRE_PACKAGE") != "1" {
		t.Skip("installs the .deb system-wide: set IDLEGRID_REQUIRE_PACKAGE=1 to run it (root, dpkg; .ci/run does)")
	}
	if os.Geteuid() != 0 {
		t.Fatal("IDLEGRID_REQUIRE_PACKAGE=1 but not root: dpkg -i needs root")
	}
	for _, tool := range []string{"dpkg", "dpkg-query", "make", "runuser"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("IDLEGRID_REQUIRE_PACKAGE=1 but %s is missing: %v", tool, err)
		}
	}
	// Never clobber a real install: purging it would delete its identity.
	if out, _ := exec.Command("dpkg-query", "-W", "-f=${Status}", "idlegrid").Output(); strings.Contains(string(out), "installed") {
		t.Fatalf("package idlegrid is already installed (%s): refusing to replace and purge it", out)
	}
	if exec.Command("getent", "passwd", "idlegrid").Run() == nil {
		t.Fatal("user idlegrid exists: refusing to run a test that deletes it on purge")
	}
}

// TestPackageInstalls builds the .deb with make package, installs it with
// dpkg -i, checks what it put where, verifies the installed unit with
// systemd-analyze, then removes and purges it and checks nothing is left.
func TestPackageInstalls(t *testing.T) {
	requirePackageTest(t)
	dist := t.TempDir()
	run(t, "make", "-C", "..", "package", "DIST="+dist, "VERSION="+testVersion)
	// make package builds for the host's GOARCH, and Debian names amd64
	// and arm64 as Go does.
	debs, _ := filepath.Glob(filepath.Join(dist, "idlegrid_*.deb"))
	if len(debs) != 1 {
		t.Fatalf("make package made %v in %s, want one idlegrid_*.deb", debs, dist)
	}
	if want := "idlegrid_" + testDebVersion + "_" + runtime.GOARCH + ".deb"; filepath.Base(debs[0]) != want {
		t.Errorf("package file %s, want %s", filepath.Base(debs[0]), want)
	}

	// Purge even when a check below fails, so the machine is left clean.
	t.Cleanup(func() {
		if out, err := exec.Command("dpkg", "--purge", "idlegrid").CombinedOutput(); err != nil {
			t.Errorf("cleanup: dpkg --purge: %v\n%s", err, out)
		}
	})
	run(t, "dpkg", "-i", debs[0])

	if got := strings.TrimSpace(run(t, "dpkg-query", "-W", "-f=${Version}", "idlegrid")); got != testDebVersion {
		t.Errorf("installed version %q, want %q", got, testDebVersion)
	}
	if got := strings.TrimSpace(run(t, "/usr/bin/idlegrid", "version")); got != "idlegrid "+testVersion {
		t.Errorf("/usr/bin/idlegrid version = %q, want %q", got, "idlegrid "+testVersion)
	}
	const unit = "/usr/lib/systemd/system/idlegrid.service"
	sameFile(t, unit, unitPath)
	sameFile(t, "/etc/default/idlegrid", "deb/default")
	sameFile(t, "/usr/share/doc/idlegrid/prometheus/alerts.yml", "prometheus/alerts.yml")
	if !strings.Contains(run(t, "dpkg-query", "-W", "-f=${Conffiles}", "idlegrid"), "/etc/default/idlegrid") {
		t.Error("/etc/default/idlegrid is not a conffile: an upgrade would overwrite the operator's edits")
	}

	// postinst made the user and its home; the user can initialise it.
	run(t, "getent", "passwd", "idlegrid")
	checkHome(t, "/var/lib/idlegrid")
	run(t, "runuser", "-u", "idlegrid", "--", "/usr/bin/idlegrid", "init",
		"--home", "/var/lib/idlegrid", "--role", "provider", "--region", "de")

	t.Run("systemd-analyze verify", func(t *testing.T) { verifyUnit(t, unit) })

	// remove keeps the node's identity, its user and the conffile.
	run(t, "dpkg", "-r", "idlegrid")
	for _, gone := range []string{"/usr/bin/idlegrid", unit} {
		if _, err := os.Stat(gone); !os.IsNotExist(err) {
			t.Errorf("dpkg -r left %s (%v)", gone, err)
		}
	}
	for _, kept := range []string{"/var/lib/idlegrid/identity.key", "/etc/default/idlegrid"} {
		if _, err := os.Stat(kept); err != nil {
			t.Errorf("dpkg -r should keep %s: %v", kept, err)
		}
	}

	// purge deletes the rest.
	run(t, "dpkg", "--purge", "idlegrid")
	for _, gone := range []string{"/var/lib/idlegrid", "/etc/default/idlegrid", "/usr/share/doc/idlegrid"} {
		if _, err := os.Stat(gone); !os.IsNotExist(err) {
			t.Errorf("dpkg --purge left %s (%v)", gone, err)
		}
	}
	for _, db := range []string{"passwd", "group"} {
		if exec.Command("getent", db, "idlegrid").Run() == nil {
			t.Errorf("dpkg --purge left idlegrid in %s", db)
		}
	}
}

// verifyUnit runs systemd-analyze verify on the installed unit, whose
// ExecStart binary now exists. Like TestUnitVerifies, any message naming
// the unit fails: verify exits 0 on values it ignores.
func verifyUnit(t *testing.T, unit string) {
	t.Helper()
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed: the installed unit is not verified (apt-get install systemd; .ci/run does)")
	}
	out, err := exec.Command(analyze, "verify", unit).CombinedOutput()
	about := strings.Contains(string(out), "idlegrid.service")
	if err != nil || about {
		t.Errorf("systemd-analyze verify %s: %v\n%s", unit, err, out)
	}
}

// checkHome: the home postinst made is the idlegrid user's, mode 0700, as
// the daemon requires.
func checkHome(t *testing.T, dir string) {
	t.Helper()
	out := strings.TrimSpace(run(t, "stat", "-c", "%U:%G %a", dir))
	if out != "idlegrid:idlegrid 700" {
		t.Errorf("%s is %q, want idlegrid:idlegrid 700", dir, out)
	}
}

func sameFile(t *testing.T, installed, source string) {
	t.Helper()
	got, err := os.ReadFile(installed)
	if err != nil {
		t.Errorf("package did not install %s: %v", installed, err)
		return
	}
	want, err := os.ReadFile(source)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from %s", installed, source)
	}
}

// run runs a command and returns its stdout; it fails the test, with the
// command's output, when the command fails.
func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}
