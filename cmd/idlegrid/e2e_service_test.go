package main_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-msgio"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/idlegrid/idlegrid/node/api"
	"github.com/idlegrid/idlegrid/node/forward"
	"github.com/idlegrid/idlegrid/node/lease"
)

// TestDockerServiceEndToEnd runs a service job on the real binary and
// Docker: the test image serves HTTP; the renter forwards a local port to
// it with `job forward`, and requests answer through the tunnel, with
// p50/p95 in `job status`; a peer that is not the renter is refused; the
// health check failing marks the lease unhealthy and stops payment;
// cancelling the job stops the container and closes the tunnel.
func TestDockerServiceEndToEnd(t *testing.T) {
	cli := needDocker(t)
	// Short attestation periods: payment stops seconds after the service
	// turns unhealthy.
	d := startDockerNet(t, cli, 1, 1,
		"--set", "attest.sample=100ms", "--set", "attest.window=1s",
		"--set", "attest.voucher_interval=1s", "--set", "attest.voucher_grace=3s")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, p := range d.providers {
			_ = cli.NetworkRemove(ctx, "idlegrid-svc-"+p.peerID)
		}
	})
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	id := d.submitService(t)
	prov, leaseID := d.winner(t, ctx, id)
	waitFor(t, ctx, "the service to run healthy", d.all, func() (bool, string) {
		j, err := d.job(id)
		if err != nil {
			return false, err.Error()
		}
		l := j.Leases[len(j.Leases)-1]
		return l.State == lease.Running && l.Health == lease.HealthHealthy, fmt.Sprintf("lease %s, health %q", l.State, l.Health)
	})

	var f api.Forward
	runJSON(t, d.bin, &f, "job", "forward", id, "127.0.0.1:0", "--remote-port", "8080", "--detach", "--json", "--home", d.renter.home)
	client := &http.Client{Timeout: 30 * time.Second}
	const n = 20
	for i := range n {
		body := get(t, client, fmt.Sprintf("http://%s/r%d", f.Listen, i))
		if body != fmt.Sprintf("hello /r%d", i) {
			t.Fatalf("answer %q", body)
		}
	}
	waitFor(t, ctx, "p50/p95 in job status", d.all, func() (bool, string) {
		j, err := d.job(id)
		if err != nil || len(j.Forwards) != 1 {
			return false, fmt.Sprintf("forwards %+v %v", j.Forwards, err)
		}
		s := j.Forwards[0].Stats
		return s.Requests >= n && s.P50Ms > 0 && s.P95Ms >= s.P50Ms, fmt.Sprintf("stats %+v", s)
	})
	out, err := exec.Command(d.bin, "job", "status", id, "--home", d.renter.home).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "P95") || !strings.Contains(string(out), "running (healthy)") {
		t.Errorf("job status:\n%s %v", out, err)
	}

	for _, m := range []struct {
		p    *proc
		name string
	}{{d.renter, "idlegrid_forward_client_request_seconds_count"}, {prov, "idlegrid_forward_served_tunnels_total"}} {
		text, err := m.p.client.Metrics(ctx)
		if err != nil || !strings.Contains(text, m.name) {
			t.Errorf("%s metrics lack %s (%v)", m.p.name, m.name, err)
		}
	}

	if err := strangerTunnel(ctx, prov, leaseID); !errors.Is(err, forward.ErrRefused) {
		t.Fatalf("a peer that is not the renter opened the tunnel: %v", err)
	}

	// kill -9 the provider: the container lives on, the restarted daemon
	// reattaches to it, and the same forward carries requests again.
	prov.kill9(t)
	prov.start(t, d.bin)
	waitFor(t, ctx, "the forward to answer after the provider's restart", d.all, func() (bool, string) {
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + f.Listen + "/after-restart")
		if err != nil {
			return false, err.Error()
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return string(b) == "hello /after-restart", fmt.Sprintf("answer %q", b)
	})
	if j, err := d.job(id); err != nil || len(j.Leases) != 1 || j.Leases[0].State != lease.Running {
		t.Fatalf("after the provider's restart: %+v %v, want the one lease running", j.Leases, err)
	}

	// The health check fails: unhealthy, and the renter stops paying.
	if body := get(t, client, "http://"+f.Listen+"/sick"); !strings.Contains(body, "sick") {
		t.Fatalf("/sick answered %q", body)
	}
	waitFor(t, ctx, "the lease unhealthy and payment stopped", d.all, func() (bool, string) {
		j, err := d.job(id)
		if err != nil {
			return false, err.Error()
		}
		l := j.Leases[len(j.Leases)-1]
		stopped := false
		for _, ev := range j.Events {
			stopped = stopped || (ev.Kind == "payment-stopped" && strings.Contains(ev.Message, "health check"))
		}
		return l.Health == lease.HealthUnhealthy && stopped, fmt.Sprintf("health %q, payment stopped %v", l.Health, stopped)
	})

	// Cancel: the container stops and an open tunnel closes.
	conn, err := net.Dial("tcp", f.Listen)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	fmt.Fprintf(conn, "GET /open HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if out, err := exec.Command(d.bin, "job", "cancel", id, "--home", d.renter.home).CombinedOutput(); err != nil {
		t.Fatalf("job cancel: %v\n%s", err, out)
	}
	_ = conn.SetReadDeadline(time.Now().Add(time.Minute))
	if _, err := br.ReadByte(); err == nil {
		t.Fatal("tunnel still open after cancel")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("tunnel still open a minute after cancel")
	}
	d.waitNoContainers(t, ctx)
}

// submitService posts a service job serving HTTP on 8080 from the test
// image, checked every second.
func (d *dockerNet) submitService(t *testing.T) string {
	t.Helper()
	spec := fmt.Sprintf(`name: web
kind: service
image: %s
command: ["/jobprog", "serve", "8080"]
ports: [8080]
health: http:8080/healthz
health_interval: 1s
health_threshold: 2
gpus: 1
gpu: [t4]
tier: silver
max_price: 5
duration: 10m
bid_window: 2s
`, jobImage)
	file := filepath.Join(t.TempDir(), "svc.yaml")
	if err := os.WriteFile(file, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	var job api.Job
	runJSON(t, d.bin, &job, "job", "submit", "-f", file, "--home", d.renter.home, "--detach", "--json")
	return job.ID
}

func get(t *testing.T, c *http.Client, url string) string {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// strangerTunnel opens the lease's tunnel from a fresh libp2p host, a
// peer that is not the lease's renter, and returns the provider's answer.
func strangerTunnel(ctx context.Context, prov *proc, leaseID string) error {
	h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"))
	if err != nil {
		return err
	}
	defer h.Close()
	pid, err := peer.Decode(prov.peerID)
	if err != nil {
		return err
	}
	addr := ma.StringCast(fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", prov.p2pPort))
	if err := h.Connect(ctx, peer.AddrInfo{ID: pid, Addrs: []ma.Multiaddr{addr}}); err != nil {
		return err
	}
	s, err := h.NewStream(ctx, pid, forward.Proto)
	if err != nil {
		return err
	}
	defer s.Close()
	hdr, _ := forward.Header{LeaseID: leaseID, Port: 8080}.Encode()
	if err := msgio.NewVarintWriter(s).WriteMsg(hdr); err != nil {
		return err
	}
	raw, err := msgio.NewVarintReaderSize(s, forward.MaxReplyBytes).ReadMsg()
	if err != nil {
		return err
	}
	r, err := forward.DecodeReply(raw)
	if err != nil {
		return err
	}
	return r.Err()
}
