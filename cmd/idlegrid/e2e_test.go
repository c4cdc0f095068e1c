package main_test

import (
	"bytes"
	"context"
	"fmt"
	mathrand "math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/node/api"
	"github.com/idlegrid/idlegrid/node/api/client"
	"github.com/idlegrid/idlegrid/node/executor/wasm/demo"
)

// buildBinary compiles the idlegrid binary once per test run.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "idlegrid")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// freePort returns a port that was free a moment ago on both TCP and UDP,
// so the node can listen with TCP and QUIC on the same number. It picks
// below the kernel's ephemeral range: a port the kernel hands out for
// ":0" or for an outbound connection could be taken by another test
// process (node/nodetest runs beside these tests) between this check and
// the daemon's bind, which once made a daemon fail with "in use by
// another program". Within this process no port is handed out twice.
func freePort(t *testing.T) int {
	t.Helper()
	lo, hi := 20000, ephemeralLow()
	for range 200 {
		port := 0
		if hi-lo >= 1000 {
			port = lo + mathrand.IntN(hi-lo)
			handedMu.Lock()
			taken := handed[port]
			handed[port] = true
			handedMu.Unlock()
			if taken {
				continue
			}
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		port = l.Addr().(*net.TCPAddr).Port
		u, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", port))
		l.Close()
		if err == nil {
			u.Close()
			return port
		}
	}
	t.Fatal("no free port")
	return 0
}

var (
	handedMu sync.Mutex
	handed   = map[int]bool{}
)

// ephemeralLow is the first port of the kernel's ephemeral range (32768
// when it cannot be read).
func ephemeralLow() int {
	raw, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	var lo, hi int
	if _, err := fmt.Sscan(string(raw), &lo, &hi); err != nil || lo <= 0 {
		return 32768
	}
	return lo
}

type proc struct {
	name    string
	home    string
	peerID  string
	p2pPort int
	apiPort int
	args    []string
	env     []string // added to the test's environment (failpoints)
	cmd     *exec.Cmd
	log     *syncBuffer
	client  *client.Client
}

// syncBuffer is a process's log: the daemon writes it while the test reads
// it for diagnostics.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// start starts the daemon. A restarted process appends to the same log.
func (p *proc) start(t *testing.T, bin string) {
	t.Helper()
	if p.log == nil {
		p.log = &syncBuffer{}
	} else {
		fmt.Fprintf(p.log, "\n--- %s restarted ---\n", p.name)
	}
	p.cmd = exec.Command(bin, append([]string{"daemon", "--home", p.home}, p.args...)...)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if len(p.env) > 0 {
		p.cmd.Env = append(os.Environ(), p.env...)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", p.name, err)
	}
}

func (p *proc) kill9(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill %s: %v", p.name, err)
	}
	_ = p.cmd.Wait()
}

func (p *proc) stop() {
	if p.cmd == nil || p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
}

// initProc runs `idlegrid init` for one member of a test network (providers
// in region de) and returns its process, not started, with its peer ID and
// free ports.
func initProc(t *testing.T, bin, root, name, role string) *proc {
	t.Helper()
	p := &proc{name: name, home: filepath.Join(root, name), p2pPort: freePort(t), apiPort: freePort(t)}
	args := []string{"init", "--role", role, "--home", p.home}
	if role == "provider" {
		args = append(args, "--region", "de")
	}
	out, err := run(t, bin, args...)
	if err != nil {
		t.Fatalf("init %s: %v\n%s", name, err, out)
	}
	m := peerIDLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("init output has no peer ID:\n%s", out)
	}
	p.peerID = m[1]
	return p
}

var peerIDLine = regexp.MustCompile(`peer ID: (\S+)`)

func run(t *testing.T, bin string, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command(bin, args...).CombinedOutput()
	return string(out), err
}

func waitFor(t *testing.T, ctx context.Context, what string, procs []*proc, cond func() (bool, string)) {
	t.Helper()
	last := ""
	for {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		select {
		case <-ctx.Done():
			for _, p := range procs {
				t.Logf("--- log of %s ---\n%s", p.name, tail(p.log.String(), 3000))
			}
			t.Fatalf("timed out waiting for %s; last state: %s", what, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// TestNetworkHealsAfterKill9 runs the real binary: 1 bootstrap, 3
// providers and 1 renter on 127.0.0.1. It kills -9 the bootstrap peer and
// one provider, restarts both, and checks that every node sees the others
// again and that gossip reaches every subscriber again.
func TestNetworkHealsAfterKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test")
	}
	bin := buildBinary(t)
	root := t.TempDir()
	roles := []struct{ name, role string }{
		{"bootstrap", "bootstrap"}, {"provider-1", "provider"}, {"provider-2", "provider"}, {"provider-3", "provider"}, {"renter", "renter"},
	}
	var procs []*proc
	for _, r := range roles {
		procs = append(procs, initProc(t, bin, root, r.name, r.role))
	}
	// init refuses to clobber an existing home.
	if out, err := run(t, bin, "init", "--role", "renter", "--home", procs[1].home); err == nil || !strings.Contains(out, "is already a node home") {
		t.Fatalf("second init must refuse: %v\n%s", err, out)
	}
	// A client command without a daemon says so clearly.
	if out, err := run(t, bin, "status", "--home", procs[1].home); err == nil || !strings.Contains(out, "no idlegrid daemon is running") {
		t.Fatalf("status without daemon: %v\n%s", err, out)
	}

	boot := procs[0]
	bootAddr := fmt.Sprintf("/ip4/127.0.0.1/tcp/%d/p2p/%s", boot.p2pPort, boot.peerID)
	for _, p := range procs {
		p.args = []string{
			"--listen", fmt.Sprintf("/ip4/127.0.0.1/tcp/%d,/ip4/127.0.0.1/udp/%d/quic-v1", p.p2pPort, p.p2pPort),
			"--api-listen", fmt.Sprintf("127.0.0.1:%d", p.apiPort),
			"--set", "p2p.nat=false",
			"--set", "api.debug=true",
			"--set", "p2p.reconnect_min=200ms",
			"--set", "p2p.reconnect_max=2s",
			"--set", "p2p.gossip_heartbeat=200ms",
			"--set", "p2p.conn_grace=0s",
			"--log-level", "debug",
		}
		if strings.HasPrefix(p.name, "provider") {
			// No GPU here; the sim backend gives the provider something to
			// advertise, and docker is not promised without an engine.
			p.args = append(p.args, "--set", "gpu.backend=sim", "--set", "gpu.sim.profiles=t4", "--set", "provider.runtimes=wasm")
		}
		if p != boot {
			p.args = append(p.args, "--bootstrap", bootAddr)
		}
		tokenBytes, err := os.ReadFile(filepath.Join(p.home, "api.token"))
		if err != nil {
			t.Fatal(err)
		}
		p.client = client.New(fmt.Sprintf("http://127.0.0.1:%d", p.apiPort), strings.TrimSpace(string(tokenBytes)))
		p.start(t, bin)
		t.Cleanup(p.stop)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	waitAllConnected(t, ctx, procs)
	gossipRound(t, ctx, bin, procs, "round-1")

	// The CLI reads from the running daemon.
	if out, err := run(t, bin, "status", "--home", procs[1].home, "--json"); err != nil || !strings.Contains(out, `"ready": true`) {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	if out, err := run(t, bin, "status", "--home", procs[1].home); err != nil || !strings.Contains(out, "providers backed (") {
		t.Fatalf("status: %v\n%s", err, out)
	}
	if out, err := run(t, bin, "peers", "--home", procs[1].home); err != nil || !strings.Contains(out, boot.peerID) {
		t.Fatalf("peers: %v\n%s", err, out)
	}

	// Kill -9 the bootstrap peer and a provider; the rest must notice.
	victims := []*proc{procs[0], procs[1]}
	for _, v := range victims {
		v.kill9(t)
	}
	waitFor(t, ctx, "survivors to drop the killed peers", procs, func() (bool, string) {
		for _, p := range procs[2:] {
			peers, err := p.client.Peers(ctx)
			if err != nil {
				return false, err.Error()
			}
			for _, q := range peers {
				if q.Connected && (q.ID == victims[0].peerID || q.ID == victims[1].peerID) {
					return false, p.name + " still connected to " + q.ID
				}
			}
		}
		return true, ""
	})
	for _, v := range victims {
		v.start(t, bin)
	}
	waitAllConnected(t, ctx, procs)
	gossipRound(t, ctx, bin, procs, "round-2")
}

// waitAllConnected waits until every node is ready and connected to every
// other node.
func waitAllConnected(t *testing.T, ctx context.Context, procs []*proc) {
	t.Helper()
	waitFor(t, ctx, "every node to see every other node", procs, func() (bool, string) {
		for _, p := range procs {
			st, err := p.client.Status(ctx)
			if err != nil {
				return false, p.name + ": " + err.Error()
			}
			if !st.Ready {
				return false, p.name + " not ready"
			}
			peers, err := p.client.Peers(ctx)
			if err != nil {
				return false, p.name + ": " + err.Error()
			}
			var ids []string
			for _, q := range peers {
				if q.Connected {
					ids = append(ids, q.ID)
				}
			}
			for _, q := range procs {
				if q != p && !slices.Contains(ids, q.peerID) {
					return false, p.name + " does not see " + q.name
				}
			}
		}
		return true, ""
	})
}

// e2eModule is the WASM module of test jobs (only the auction runs, but a
// renter refuses at submit a module it does not hold, so gossipRound adds
// it).
const e2eModule = demo.CID

// gossipRound submits a job on the renter with the CLI and waits until
// every provider (the RFQ topic's subscribers) has received its signed RFQ.
func gossipRound(t *testing.T, ctx context.Context, bin string, procs []*proc, tag string) {
	t.Helper()
	providers := procs[1:4]
	renter := procs[4]
	waitFor(t, ctx, "rfq topic peers", procs, func() (bool, string) {
		// The renter's market view knows every provider again (digests).
		res, err := renter.client.Search(ctx, "", client.SearchOptions{})
		if err != nil {
			return false, err.Error()
		}
		if len(res.Offers) < 3 {
			return false, fmt.Sprintf("renter's market view has %d of 3 providers", len(res.Offers))
		}
		return true, ""
	})
	if _, err := renter.client.AddArtifact(ctx, bytes.NewReader(demo.Module())); err != nil {
		t.Fatalf("add the test module: %v", err)
	}
	out, err := run(t, bin, "job", "submit", "--home", renter.home, "--detach", "--json",
		"--name", tag, "--module", e2eModule, "--gpus", "1", "--gpu", "t4", "--tier", "bronze",
		"--max-price", "5", "--duration", "3s")
	if err != nil {
		t.Fatalf("job submit: %v\n%s", err, out)
	}
	waitFor(t, ctx, "RFQ delivery "+tag, procs, func() (bool, string) {
		job, err := renter.client.Job(ctx, jobID(out))
		if err != nil || len(job.RFQs) == 0 {
			return false, fmt.Sprintf("job has no RFQ yet (%v)", err)
		}
		for _, p := range providers {
			got, err := p.client.RecentGossip(ctx, "idlegrid/rfq/2/gpu/t4")
			if err != nil {
				return false, err.Error()
			}
			found := slices.ContainsFunc(got, func(m api.GossipMessage) bool {
				return m.From == renter.peerID && len(m.Data) > 0 && m.ReceivedAt.After(job.CreatedAt.Add(-time.Second))
			})
			if !found {
				return false, fmt.Sprintf("%s has not received the RFQ of %s", p.name, tag)
			}
		}
		return true, ""
	})
}

func jobID(submitJSON string) string {
	m := regexp.MustCompile(`"id": "([^"]+)"`).FindStringSubmatch(submitJSON)
	if m == nil {
		return ""
	}
	return m[1]
}

// TestFreePortIsOutsideTheEphemeralRange: the ports the tests hand their
// daemons are never ones the kernel gives out on its own, and never the
// same twice.
func TestFreePortIsOutsideTheEphemeralRange(t *testing.T) {
	seen := map[int]bool{}
	for range 100 {
		p := freePort(t)
		if p >= ephemeralLow() || seen[p] {
			t.Fatalf("port %d: in the ephemeral range from %d, or handed out twice", p, ephemeralLow())
		}
		seen[p] = true
	}
}
