package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const unitPath = "systemd/idlegrid.service"

// TestUnitHardening: the unit keeps the settings docs/operators.md promises.
func TestUnitHardening(t *testing.T) {
	raw, err := os.ReadFile(unitPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]bool{}
	for _, l := range strings.Split(string(raw), "\n") {
		lines[strings.TrimSpace(l)] = true
	}
	for _, want := range []string{
		"User=idlegrid", "NoNewPrivileges=yes", "ProtectSystem=strict", "ProtectHome=yes",
		"ReadWritePaths=/var/lib/idlegrid", "CapabilityBoundingSet=", "PrivateTmp=yes",
		"ExecReload=/bin/kill -HUP $MAINPID", "StateDirectory=idlegrid",
	} {
		if !lines[want] {
			t.Errorf("%s lacks %q", unitPath, want)
		}
	}
}

// TestUnitVerifies runs systemd-analyze verify on the unit, with the
// binary's path pointed at one that exists here. verify exits 0 even on
// values it ignores, so any message about the unit fails the test.
func TestUnitVerifies(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed")
	}
	raw, err := os.ReadFile(unitPath)
	if err != nil {
		t.Fatal(err)
	}
	unit := filepath.Join(t.TempDir(), "idlegrid.service")
	if err := os.WriteFile(unit, []byte(strings.ReplaceAll(string(raw), "/usr/bin/idlegrid", "/bin/true")), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", unit).CombinedOutput()
	var msgs []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "idlegrid.service") {
			msgs = append(msgs, l)
		}
	}
	if err != nil || len(msgs) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}
