package docker

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"

	"github.com/idlegrid/idlegrid/node/executor"
)

func testPlan() plan {
	return plan{
		spec: executor.Spec{
			Runtime: Runtime, JobID: "j1", LeaseID: "l1", Image: "x@sha256:" + strings.Repeat("0", 64),
			Args: []string{"run", "--fast"}, Env: map[string]string{"B": "2", "A": "1"},
		},
		image:       localImage{id: "sha256:" + strings.Repeat("0", 64)},
		outDir:      "/work/idlegrid-x/out",
		memBytes:    64 << 20,
		diskBytes:   128 << 20,
		pids:        100,
		maxDuration: 90 * time.Second,
		instance:    "peer1",
		maxLogBytes: 1 << 20,
	}
}

func TestContainerConfigHardening(t *testing.T) {
	cfg, hc := containerConfig(testPlan())
	if cfg.Image != "sha256:"+strings.Repeat("0", 64) {
		t.Errorf("Image = %q, want the resolved ID", cfg.Image)
	}
	if !slices.Equal(cfg.Cmd, []string{"run", "--fast"}) || cfg.Entrypoint != nil {
		t.Errorf("Cmd %q, Entrypoint %q; want args, image entrypoint", cfg.Cmd, cfg.Entrypoint)
	}
	if !slices.Equal(cfg.Env, []string{"A=1", "B=2"}) {
		t.Errorf("Env = %q, want sorted", cfg.Env)
	}
	if cfg.User != nobody {
		t.Errorf("User = %q, want %q for an image without USER", cfg.User, nobody)
	}
	if cfg.OpenStdin || cfg.AttachStdin {
		t.Error("stdin open without spec stdin")
	}
	wantLabels := map[string]string{
		labelManaged: "true", labelInstance: "peer1", labelJob: "j1", labelLease: "l1",
		labelMaxDuration: "90000", labelDiskBytes: "134217728",
	}
	for k, v := range wantLabels {
		if cfg.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, cfg.Labels[k], v)
		}
	}
	if hc.Privileged || !slices.Equal(hc.CapDrop, []string{"ALL"}) || len(hc.CapAdd) > 0 {
		t.Errorf("privileged %v, CapDrop %v, CapAdd %v", hc.Privileged, hc.CapDrop, hc.CapAdd)
	}
	if !slices.Contains(hc.SecurityOpt, "no-new-privileges") {
		t.Errorf("SecurityOpt = %v", hc.SecurityOpt)
	}
	if !hc.ReadonlyRootfs {
		t.Error("root filesystem writable")
	}
	if hc.NetworkMode != "none" {
		t.Errorf("NetworkMode = %q, want none", hc.NetworkMode)
	}
	if got := hc.Tmpfs[tmpPath]; !strings.Contains(got, "size=134217728") {
		t.Errorf("tmpfs /tmp = %q, want size of the disk limit", got)
	}
	wantMount := mount.Mount{Type: mount.TypeBind, Source: "/work/idlegrid-x/out", Target: outPath}
	if len(hc.Mounts) != 1 || hc.Mounts[0] != wantMount {
		t.Errorf("Mounts = %+v, want only %+v", hc.Mounts, wantMount)
	}
	if len(hc.Binds) > 0 || len(hc.VolumesFrom) > 0 || len(hc.Devices) > 0 || len(hc.DeviceRequests) > 0 {
		t.Errorf("extra host access: binds %v, volumes-from %v, devices %v, requests %v",
			hc.Binds, hc.VolumesFrom, hc.Devices, hc.DeviceRequests)
	}
	if hc.PidMode != "" || hc.IpcMode != container.IPCModePrivate || hc.UTSMode != "" || hc.UsernsMode != "" {
		t.Errorf("namespaces: pid %q ipc %q uts %q userns %q", hc.PidMode, hc.IpcMode, hc.UTSMode, hc.UsernsMode)
	}
	r := hc.Resources
	if r.Memory != 64<<20 || r.MemorySwap != r.Memory {
		t.Errorf("Memory %d, MemorySwap %d; want 64 MiB and no swap", r.Memory, r.MemorySwap)
	}
	if r.PidsLimit == nil || *r.PidsLimit != 100 {
		t.Errorf("PidsLimit = %v", r.PidsLimit)
	}
	if r.NanoCPUs != 0 {
		t.Errorf("NanoCPUs = %d without a CPU limit", r.NanoCPUs)
	}
	if hc.LogConfig.Type != "json-file" || hc.LogConfig.Config["max-size"] != "1048576" {
		t.Errorf("LogConfig = %+v", hc.LogConfig)
	}
	if hc.Init != nil {
		t.Errorf("Init = %v on an engine without docker-init", *hc.Init)
	}
	if hc.AutoRemove || hc.RestartPolicy.Name != container.RestartPolicyDisabled {
		t.Errorf("AutoRemove %v, RestartPolicy %v", hc.AutoRemove, hc.RestartPolicy)
	}
}

func TestContainerConfigOptions(t *testing.T) {
	p := testPlan()
	p.spec.Limits = executor.Limits{
		GPUs:     []string{"GPU-11111111-2222-3333-4444-555555555555", "GPU-66666666-7777-8888-9999-000000000000"},
		CPUCores: 1.5, Network: executor.NetworkEgress,
	}
	p.spec.Command = []string{"/bin/train"}
	p.spec.Stdin = []byte("input")
	p.init = true
	p.image.user = "1000:1000"
	cfg, hc := containerConfig(p)
	if !slices.Equal(cfg.Entrypoint, []string{"/bin/train"}) {
		t.Errorf("Entrypoint = %q", cfg.Entrypoint)
	}
	if !cfg.OpenStdin || !cfg.StdinOnce || !cfg.AttachStdin {
		t.Errorf("stdin: open %v once %v attach %v", cfg.OpenStdin, cfg.StdinOnce, cfg.AttachStdin)
	}
	if cfg.User != "" {
		t.Errorf("User = %q, want the image's own non-root user", cfg.User)
	}
	if hc.NetworkMode != "bridge" {
		t.Errorf("NetworkMode = %q, want bridge for egress", hc.NetworkMode)
	}
	if hc.NanoCPUs != 1_500_000_000 {
		t.Errorf("NanoCPUs = %d", hc.NanoCPUs)
	}
	if hc.Init == nil || !*hc.Init {
		t.Error("Init not set with docker-init available")
	}
	if len(hc.DeviceRequests) != 1 {
		t.Fatalf("DeviceRequests = %+v", hc.DeviceRequests)
	}
	dr := hc.DeviceRequests[0]
	if dr.Driver != "nvidia" || !slices.Equal(dr.DeviceIDs, p.spec.Limits.GPUs) || dr.Count != 0 ||
		len(dr.Capabilities) != 1 || !slices.Equal(dr.Capabilities[0], []string{"gpu"}) {
		t.Errorf("DeviceRequest = %+v, want nvidia by UUID with capability gpu", dr)
	}

	for user, forced := range map[string]bool{"": true, "root": true, "0": true, "0:0": true, "root:1000": true,
		"1000": false, "nobody": false, "app:app": false} {
		p := testPlan()
		p.image.user = user
		if cfg, _ := containerConfig(p); (cfg.User == nobody) != forced {
			t.Errorf("image user %q: User = %q, forced to nobody: want %v", user, cfg.User, forced)
		}
		p.allowRoot = true
		if cfg, _ := containerConfig(p); cfg.User != "" {
			t.Errorf("image user %q with AllowRoot: User = %q, want the image's", user, cfg.User)
		}
	}
}

func TestParseImage(t *testing.T) {
	hex := strings.Repeat("0123456789abcdef", 4)
	ref, err := parseImage("ghcr.io/org/img@sha256:" + hex)
	if err != nil || ref.name != "ghcr.io/org/img" || ref.digest != "sha256:"+hex {
		t.Fatalf("parseImage = %+v, %v", ref, err)
	}
	for _, bad := range []string{
		"img", "img:latest", "img:latest@sha512:" + hex, "@sha256:" + hex, "sha256:" + hex,
		"img@sha256:" + hex[:63], "img@sha256:" + strings.ToUpper(hex), "img@sha256:" + hex + "0", "i g@sha256:" + hex,
	} {
		if _, err := parseImage(bad); err == nil {
			t.Errorf("parseImage(%q) succeeded", bad)
		}
	}
}

func TestResult(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ts := func(d time.Duration) string { return t0.Add(d).Format(time.RFC3339Nano) }
	exited := func(code int, oom bool, fin time.Duration) *container.State {
		return &container.State{Status: container.StateExited, ExitCode: code, OOMKilled: oom,
			StartedAt: ts(0), FinishedAt: ts(fin)}
	}
	stopAt := func(d time.Duration) endMark { return endMark{executor.ReasonStopped, t0.Add(d)} }
	cases := []struct {
		name   string
		st     *container.State
		end    endMark
		done   bool
		reason string
		code   int
	}{
		{"Running", &container.State{Status: container.StateRunning, Running: true}, endMark{}, false, "", 0},
		{"Created", &container.State{Status: container.StateCreated}, endMark{}, false, "", 0},
		{"StoppedBeforeStart", &container.State{Status: container.StateCreated}, stopAt(0), true, executor.ReasonStopped, -1},
		{"StartFailed", &container.State{Status: container.StateCreated, Error: "no such file"}, endMark{}, true, executor.ReasonFailed, -1},
		{"Completed", exited(0, false, time.Second), endMark{}, true, executor.ReasonCompleted, 0},
		{"Failed", exited(3, false, time.Second), endMark{}, true, executor.ReasonFailed, 3},
		{"OOM", exited(137, true, time.Second), endMark{}, true, executor.ReasonOOM, -1},
		{"Stopped", exited(143, false, 2*time.Second), stopAt(time.Second), true, executor.ReasonStopped, -1},
		{"TimedOut", exited(137, false, 2*time.Second), endMark{executor.ReasonTimeout, t0.Add(time.Second)}, true, executor.ReasonTimeout, -1},
		// It finished by itself before the Stop: its own result stands.
		{"FinishedBeforeStop", exited(0, false, time.Second), stopAt(2 * time.Second), true, executor.ReasonCompleted, 0},
		{"Dead", &container.State{Status: container.StateDead, ExitCode: 1}, endMark{}, true, executor.ReasonFailed, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, done := result(c.st, c.end, t0)
			if done != c.done || res.Reason != c.reason || res.ExitCode != c.code {
				t.Fatalf("result = %+v, %v; want %s/%d, %v", res, done, c.reason, c.code, c.done)
			}
			if done && (res.StartedAt.IsZero() && c.st.Status != container.StateDead) {
				t.Errorf("StartedAt zero: %+v", res)
			}
		})
	}
}

func TestEndMark(t *testing.T) {
	dir := t.TempDir()
	if _, ok := readEnd(dir); ok {
		t.Fatal("mark in an empty dir")
	}
	if err := markEnd(dir, executor.ReasonTimeout); err != nil {
		t.Fatal(err)
	}
	if err := markEnd(dir, executor.ReasonStopped); err == nil {
		t.Fatal("second mark succeeded")
	}
	end, ok := readEnd(dir)
	if !ok || end.reason != executor.ReasonTimeout || time.Since(end.at) > time.Minute {
		t.Fatalf("readEnd = %+v, %v; want the first mark", end, ok)
	}
}

func TestHandles(t *testing.T) {
	h := newHandle()
	if !validHandle(string(h)) {
		t.Fatalf("newHandle() = %q is not valid", h)
	}
	for _, bad := range []string{"", "idlegrid-", "wasm-abc", "idlegrid-../../etc/passwd000000000", string(h) + "x",
		strings.ToUpper(string(h))} {
		if validHandle(bad) {
			t.Errorf("validHandle(%q)", bad)
		}
	}
	if graceSeconds(0) != 0 || graceSeconds(time.Millisecond) != 1 || graceSeconds(10*time.Second) != 10 {
		t.Error("graceSeconds does not round up to whole seconds")
	}
}
