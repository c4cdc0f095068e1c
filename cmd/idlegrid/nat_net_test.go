//go:build linux

package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/client"

	"github.com/idlegrid/idlegrid/node/api"
	"github.com/idlegrid/idlegrid/node/lease"
)

// natNet is the real binary running in a natTopology: a bootstrap peer on
// the public side (the relay), provider A and the renter behind NATs that
// hole punching gets through, and provider S behind one it cannot.
type natNet struct {
	bin   string
	topo  *natTopology
	boot  *proc
	provA *proc
	rent  *proc
	provS *proc
	all   []*proc
	ns    map[*proc]string // the namespace each daemon runs in
	start time.Time
}

const (
	natP2PPort = 4001
	natAPIPort = 7402
)

// natExtra are settings of a natNet beyond the defaults.
type natExtra struct {
	// forwardA forwards provider A's port on its router.
	forwardA bool
	boot     []string // the relay's limits
	provS    []string // provider S's prices
}

// startNATNet starts the four daemons in their namespaces.
func startNATNet(t *testing.T, cli *client.Client, extra natExtra) *natNet {
	t.Helper()
	n := &natNet{bin: buildBinary(t), topo: newNATTopology(t, extra.forwardA), ns: map[*proc]string{}}
	root := t.TempDir()
	add := func(name, role, ns string) *proc {
		p := initProc(t, n.bin, root, name, role)
		p.p2pPort, p.apiPort = natP2PPort, natAPIPort
		n.all = append(n.all, p)
		n.ns[p] = ns
		return p
	}
	n.boot = add("bootstrap", "bootstrap", nsBoot)
	n.provA = add("provider-a", "provider", nsProvA)
	n.rent = add("renter", "renter", nsRenter)
	n.provS = add("provider-s", "provider", nsProvS)
	t.Cleanup(func() {
		for _, p := range []*proc{n.provA, n.provS} {
			purgeInstance(t, cli, p.peerID)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			_ = cli.NetworkRemove(ctx, "idlegrid-svc-"+p.peerID)
			cancel()
		}
	})
	t.Cleanup(func() {
		if t.Failed() {
			for _, p := range n.all {
				if p.log != nil {
					t.Logf("--- log of %s ---\n%s", p.name, tail(p.log.String(), 8000))
				}
			}
		}
	})
	ips := map[*proc]string{n.boot: bootIP, n.provA: lanIP(1), n.rent: lanIP(2), n.provS: lanIP(3)}
	// Both transports of the bootstrap peer: libp2p prefers QUIC, whose hole
	// punching gets through the NATs here (see docs/operators.md).
	bootAddrs := fmt.Sprintf("/ip4/%s/udp/%d/quic-v1/p2p/%s,/ip4/%s/tcp/%d/p2p/%s",
		bootIP, natP2PPort, n.boot.peerID, bootIP, natP2PPort, n.boot.peerID)
	n.start = time.Now()
	for _, p := range n.all {
		ip := ips[p]
		p.args = []string{
			"--listen", fmt.Sprintf("/ip4/%s/udp/%d/quic-v1,/ip4/%s/tcp/%d", ip, natP2PPort, ip, natP2PPort),
			"--api-listen", fmt.Sprintf("127.0.0.1:%d", natAPIPort),
			"--set", "p2p.gossip_heartbeat=200ms",
			"--set", "p2p.reconnect_min=200ms",
			"--set", "p2p.reconnect_max=2s",
			"--set", "market.refresh=2s",
			"--log-level", "info",
		}
		switch p {
		case n.boot:
			p.args = append(p.args, extra.boot...)
		case n.provA, n.provS:
			p.args = append(p.args, "--bootstrap", bootAddrs,
				"--set", "gpu.backend=sim", "--set", "gpu.sim.profiles=t4",
				"--set", "provider.runtimes=docker", "--set", "executor.stop_grace=2s")
			if p == n.provS {
				p.args = append(p.args, extra.provS...)
			}
		default:
			p.args = append(p.args, "--bootstrap", bootAddrs)
		}
		n.startIn(t, p)
		t.Cleanup(p.stop)
	}
	return n
}

// startIn starts p's daemon inside its namespace (ip netns exec execs
// the binary, so signals reach the daemon itself).
func (n *natNet) startIn(t *testing.T, p *proc) {
	t.Helper()
	p.log = &syncBuffer{}
	p.cmd = n.topo.command(n.ns[p], append([]string{n.bin, "daemon", "--home", p.home}, p.args...)...)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", p.name, err)
	}
}

// cli runs an idlegrid command against p's daemon, inside its namespace.
func (n *natNet) cli(p *proc, args ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd := n.topo.command(n.ns[p], append(append([]string{n.bin}, args...), "--home", p.home)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		return stdout.String() + stderr.String(), fmt.Errorf("idlegrid %s on %s: %w\n%s%s", strings.Join(args, " "), p.name, err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

// json runs an idlegrid command that prints JSON and decodes it into v.
func (n *natNet) json(p *proc, v any, args ...string) error {
	out, err := n.cli(p, append(args, "--json")...)
	if err != nil {
		return err
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		return fmt.Errorf("idlegrid %s on %s: %w\n%s", strings.Join(args, " "), p.name, err, out)
	}
	return nil
}

// waitReachable waits until p's status says state and returns how long
// after the daemons' start that was.
func (n *natNet) waitReachable(t *testing.T, ctx context.Context, p *proc, state string) (api.Status, time.Duration) {
	t.Helper()
	var st api.Status
	waitFor(t, ctx, p.name+" to be "+state, n.all, func() (bool, string) {
		if err := n.json(p, &st, "status"); err != nil {
			return false, err.Error()
		}
		return st.Reachability.State == state, fmt.Sprintf("%s: %s", st.Reachability.State, st.Reachability.Detail)
	})
	return st, time.Since(n.start)
}

// peerPath is the renter's path to p ("direct", or relayed and why).
func (n *natNet) peerPath(from, to *proc) (string, error) {
	var peers []api.Peer
	if err := n.json(from, &peers, "peers"); err != nil {
		return "", err
	}
	for _, q := range peers {
		if q.ID == to.peerID && q.Connected {
			return q.Path, nil
		}
	}
	return "", fmt.Errorf("%s is not connected to %s", from.name, to.name)
}

// relayedBytes is the bootstrap relay's count of bytes it relayed.
func (n *natNet) relayedBytes(t *testing.T, ctx context.Context) float64 {
	t.Helper()
	token, err := os.ReadFile(filepath.Join(n.boot.home, "api.token"))
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/metrics", natAPIPort), nil)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	resp, err := n.topo.httpClient(nsBoot).Do(req)
	if err != nil {
		t.Fatalf("bootstrap metrics: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`(?m)^libp2p_relaysvc_data_transferred_bytes_total (\S+)$`).FindSubmatch(body)
	if m == nil {
		return 0 // nothing relayed yet: the counter has no sample
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// submit posts a docker job spec (the fields after name and image) on the
// renter and returns its ID.
func (n *natNet) submit(t *testing.T, name, fields string) string {
	t.Helper()
	spec := fmt.Sprintf("name: %s\nimage: %s\n%s", name, jobImage, fields)
	file := filepath.Join(t.TempDir(), name+".yaml")
	if err := os.WriteFile(file, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	var job api.Job
	if err := n.json(n.rent, &job, "job", "submit", "-f", file, "--detach"); err != nil {
		t.Fatal(err)
	}
	return job.ID
}

func (n *natNet) job(id string) (api.Job, error) {
	var j api.Job
	err := n.json(n.rent, &j, "job", "status", id)
	return j, err
}

// waitGossipPeers waits until the renter gossips with want providers: the
// peers of the t4 digest shard, which both sides subscribe to (a renter
// joins the RFQ shard only to publish), so its RFQs reach them.
func (n *natNet) waitGossipPeers(t *testing.T, ctx context.Context, want int) {
	t.Helper()
	waitFor(t, ctx, fmt.Sprintf("the renter to gossip with %d providers", want), n.all, func() (bool, string) {
		var st api.Status
		if err := n.json(n.rent, &st, "status"); err != nil {
			return false, err.Error()
		}
		got := st.TopicPeers["idlegrid/digest/1/gpu/t4"]
		return got >= want, fmt.Sprintf("%d topic peers", got)
	})
}

// natResultSize is the batch job's result size: 1 MiB, eight relay
// circuits' worth, or IDLEGRID_NAT_RESULT_MIB (the benchmark's setting).
func natResultSize() int {
	if mib, err := strconv.Atoi(os.Getenv("IDLEGRID_NAT_RESULT_MIB")); err == nil && mib > 0 {
		return mib << 20
	}
	return 1 << 20
}

// batchJob runs a docker job writing natResultSize bytes, checks that it
// was leased on want and completed, downloads its result on the renter and
// verifies it.
func (n *natNet) batchJob(t *testing.T, ctx context.Context, want *proc) {
	t.Helper()
	size := natResultSize()
	submitted := time.Now()
	id := n.submit(t, "nat-write", fmt.Sprintf("command: [\"/jobprog\", \"write\", \"%d\"]\ngpus: 1\ngpu: [t4]\ntier: silver\nmax_price: 5\nduration: 1m\nbid_window: 2s\n", size))
	var j api.Job
	waitFor(t, ctx, "the batch job to complete", n.all, func() (bool, string) {
		var err error
		if j, err = n.job(id); err != nil {
			return false, err.Error()
		}
		return j.Terminal(), fmt.Sprintf("%s: %s", j.State, j.Reason)
	})
	if j.State != "completed" || len(j.Leases) != 1 || j.Leases[0].Provider != want.peerID {
		var events strings.Builder
		for _, ev := range j.Events {
			fmt.Fprintf(&events, "\n  %s %s", ev.Kind, ev.Message)
		}
		t.Fatalf("batch job %s (%s), %d leases: want one completed lease on %s; events:%s", j.State, j.Reason, len(j.Leases), want.name, events.String())
	}
	t.Logf("batch job completed on %s %v after submission", want.name, time.Since(submitted).Round(time.Millisecond))
	dir := filepath.Join(t.TempDir(), "result")
	fetched := time.Now()
	if _, err := n.cli(n.rent, "job", "result", id, "-o", dir); err != nil {
		t.Fatal(err)
	}
	took := time.Since(fetched)
	got, err := os.ReadFile(filepath.Join(dir, "data.bin"))
	if err != nil || !bytes.Equal(got, jobData(size)) {
		t.Fatalf("data.bin: %d bytes (%v), want the job's %d bytes", len(got), err, size)
	}
	t.Logf("result of %d bytes (tar %d bytes) downloaded from %s in %v: %.1f MB/s", size, j.Leases[0].OutputSize, want.name,
		took.Round(time.Millisecond), float64(j.Leases[0].OutputSize)/took.Seconds()/1e6)
}

// serviceTunnel leases a service on provider A and reaches it through
// `job forward` on the renter, then cancels it.
func (n *natNet) serviceTunnel(t *testing.T, ctx context.Context, cli *client.Client) {
	t.Helper()
	id := n.submit(t, "nat-web", "kind: service\ncommand: [\"/jobprog\", \"serve\", \"8080\"]\nports: [8080]\ngpus: 1\ngpu: [t4]\ntier: silver\nmax_price: 5\nduration: 10m\nbid_window: 2s\n")
	var l api.Lease
	waitFor(t, ctx, "the service to run", n.all, func() (bool, string) {
		j, err := n.job(id)
		if err != nil || len(j.Leases) == 0 {
			return false, fmt.Sprintf("no lease yet (%v)", err)
		}
		l = j.Leases[len(j.Leases)-1]
		return l.State == lease.Running, string(l.State)
	})
	if l.Provider != n.provA.peerID {
		t.Fatalf("service leased on %s, want provider A", l.Provider)
	}
	n.wireService(t, ctx, cli, l.ID)
	var f api.Forward
	if err := n.json(n.rent, &f, "job", "forward", id, "127.0.0.1:0", "--remote-port", "8080", "--detach"); err != nil {
		t.Fatal(err)
	}
	hc := n.topo.httpClient(nsRenter)
	for i := range 5 {
		resp, err := hc.Get(fmt.Sprintf("http://%s/nat%d", f.Listen, i))
		if err != nil {
			t.Fatalf("request through the tunnel: %v", err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := fmt.Sprintf("hello /nat%d", i); string(body) != want {
			t.Fatalf("tunnel answered %q, want %q", body, want)
		}
	}
	if path, err := n.peerPath(n.rent, n.provA); err != nil || path != "direct" {
		t.Errorf("renter's path to provider A during the tunnel: %q (%v), want direct", path, err)
	}
	if _, err := n.cli(n.rent, "job", "cancel", id); err != nil {
		t.Fatal(err)
	}
}

// wireService connects provider A's namespace to the service container of
// lease: a veth between the two namespaces and a host route to the
// container's address, the one the daemon dials (docker.Endpoint).
func (n *natNet) wireService(t *testing.T, ctx context.Context, cli *client.Client, leaseID string) {
	t.Helper()
	list := containers(t, ctx, cli, n.provA.peerID, leaseID)
	if len(list) != 1 {
		t.Fatalf("provider A has %d containers for lease %s", len(list), leaseID)
	}
	ins, err := cli.ContainerInspect(ctx, list[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	var ctrIP string
	for _, nw := range ins.NetworkSettings.Networks {
		if nw != nil && nw.IPAddress != "" {
			ctrIP = nw.IPAddress
		}
	}
	if ins.State == nil || ins.State.Pid == 0 || ctrIP == "" {
		t.Fatalf("service container %s: no pid or address (%+v)", list[0].ID, ins.State)
	}
	ctrNS := n.topo.prefix + "-svc"
	n.topo.ip(t, "netns", "attach", ctrNS, strconv.Itoa(ins.State.Pid))
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ctrNS).Run() })
	const hostSide = "10.99.0.1"
	n.topo.ip(t, "link", "add", "svc0", "netns", n.topo.ns(nsProvA), "type", "veth", "peer", "name", "svc0", "netns", ctrNS)
	n.topo.ip(t, "-n", n.topo.ns(nsProvA), "addr", "add", hostSide+"/32", "dev", "svc0")
	n.topo.ip(t, "-n", n.topo.ns(nsProvA), "link", "set", "svc0", "up")
	n.topo.ip(t, "-n", n.topo.ns(nsProvA), "route", "add", ctrIP+"/32", "dev", "svc0", "src", hostSide)
	n.topo.ip(t, "-n", ctrNS, "link", "set", "svc0", "up")
	n.topo.ip(t, "-n", ctrNS, "route", "add", hostSide+"/32", "dev", "svc0")
}
