package nodetest_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-msgio"

	"github.com/idlegrid/idlegrid/node"
	"github.com/idlegrid/idlegrid/node/executor"
	"github.com/idlegrid/idlegrid/node/executor/executortest"
	"github.com/idlegrid/idlegrid/node/forward"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/node/nodetest"
	"github.com/idlegrid/idlegrid/store"
)

// serviceFake is a scripted "docker" runtime whose services are one HTTP
// server per provider on loopback: Endpoint points every port at it, and
// healthy decides the answer of /healthz.
type serviceFake struct {
	*executortest.Fake
	srv     *httptest.Server
	healthy atomic.Bool
}

func (f *serviceFake) Endpoint(_ context.Context, _ executor.Handle, _ uint16) (string, error) {
	return f.srv.Listener.Addr().String(), nil
}

// serviceFakes builds the providers' runtimes and remembers them by
// provider index.
type serviceFakes struct {
	t  *testing.T
	mu sync.Mutex
	by map[int]*serviceFake
}

func (s *serviceFakes) executors(i int, dir string) []executor.Executor {
	f := &serviceFake{Fake: executortest.NewFake(filepath.Join(dir, "fake"), nil)}
	f.Runtime = "docker"
	f.healthy.Store(true)
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" && !f.healthy.Load() {
			http.Error(w, "sick", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintf(w, "provider %d: %s", i, r.URL.Path)
	}))
	s.t.Cleanup(f.srv.Close)
	s.mu.Lock()
	s.by[i] = f
	s.mu.Unlock()
	return []executor.Executor{f}
}

// dockerOnly makes the providers offer the (fake) docker runtime.
func dockerOnly(_ int, cfg *node.Config) { cfg.Provider.Runtimes = []string{"docker"} }

const serviceImage = "example.org/svc@sha256:3f1a9c0b3f1a9c0b3f1a9c0b3f1a9c0b3f1a9c0b3f1a9c0b3f1a9c0b3f1a9c0b"

func serviceJob(name, extra string) []byte {
	return fmt.Appendf(nil, "name: %s\nkind: service\nimage: %s\ncommand: [svc, hang]\nports: [8080]\n"+
		"health: http:8080/healthz\nhealth_interval: 500ms\nhealth_threshold: 2\n%sgpus: 1\ngpu: [a10]\nmax_price: 5\nduration: 1h\nbid_window: 3s\n",
		name, serviceImage, extra)
}

func runningLease(t *testing.T, r *node.Node, jobID string) *store.Lease {
	t.Helper()
	j, err := r.Store().GetJob(jobID)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range j.Leases {
		if l, err := r.Store().GetLease(id); err == nil && l.State == lease.Running {
			return l
		}
	}
	return nil
}

// TestServiceForwardedThenCancelled: a service job is auctioned and run;
// the renter forwards a local port to it and requests go through the
// tunnel, measured; a peer that is not the renter is refused; cancelling
// the job closes the open tunnel and the forward.
func TestServiceForwardedThenCancelled(t *testing.T) {
	fakes := &serviceFakes{t: t, by: map[int]*serviceFake{}}
	c, renter := auctionCluster(t, []provOpts{{gpus: 1, bronze: 0.5}}, nodetest.Options{Executors: fakes.executors, Configure: dockerOnly})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	j, err := renter.Renter().Submit(serviceJob("svc", ""))
	if err != nil {
		t.Fatal(err)
	}
	waitJob(t, ctx, renter, j.ID, lease.JobRunning)
	if err := nodetest.WaitFor(ctx, "service healthy on the renter", func() bool {
		l := runningLease(t, renter, j.ID)
		return l != nil && l.Health == lease.HealthHealthy
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := renter.Renter().StartForward(j.ID, "127.0.0.1:0", 9999); err == nil {
		t.Error("forwarding a port the spec does not name")
	}
	f, err := renter.Renter().StartForward(j.ID, "127.0.0.1:0", 8080)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 20 * time.Second}
	for i := range 3 {
		resp, err := client.Get(fmt.Sprintf("http://%s/q%d", f.Listen, i))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.HasSuffix(string(body), fmt.Sprintf(": /q%d", i)) {
			t.Fatalf("answer %q", body)
		}
	}
	if err := nodetest.WaitFor(ctx, "requests measured", func() bool {
		fs := renter.Renter().Forwards(j.ID)
		return len(fs) == 1 && fs[0].Stats.Requests >= 3 && fs[0].Stats.P95Ms > 0
	}); err != nil {
		t.Fatal(err)
	}

	// The other provider is no renter of this lease.
	l := runningLease(t, renter, j.ID)
	stranger := c.ByRole(node.RoleBootstrap)
	var from *node.Node
	if len(stranger) > 0 {
		from = stranger[0].Node
	} else {
		from = c.Members[0].Node
	}
	if err := openAs(ctx, from, l); !errors.Is(err, forward.ErrRefused) {
		t.Fatalf("stranger's tunnel: %v, want refused", err)
	}

	// An open keep-alive connection is closed by the cancel.
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
	if _, err := renter.Renter().Cancel(ctx, j.ID); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := br.ReadByte(); err == nil || isTimeout(err) {
		t.Fatalf("tunnel still open after cancel: %v", err)
	}
	if err := nodetest.WaitFor(ctx, "forward closed with the job", func() bool {
		return len(renter.Renter().Forwards(j.ID)) == 0
	}); err != nil {
		t.Fatal(err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// openAs opens a tunnel to l's service from n and returns the refusal.
func openAs(ctx context.Context, n *node.Node, l *store.Lease) error {
	p, err := peer.Decode(l.Provider)
	if err != nil {
		return err
	}
	hdr, _ := forward.Header{LeaseID: l.ID, Port: 8080}.Encode()
	st, err := n.P2P().OpenTunnel(ctx, p, forward.Proto, hdr, forward.TunnelLimits)
	if err != nil {
		return err
	}
	defer st.Close()
	raw, err := msgio.NewVarintReaderSize(st, forward.MaxReplyBytes).ReadMsg()
	if err != nil {
		return err
	}
	r, err := forward.DecodeReply(raw)
	if err != nil {
		return err
	}
	return r.Err()
}

// TestServiceUnhealthyStopsPaymentAndMoves: a service whose health check
// fails past its threshold is marked unhealthy, the renter stops paying
// after the grace and, as the spec asks, re-auctions it to the other
// provider, where it serves again.
func TestServiceUnhealthyStopsPaymentAndMoves(t *testing.T) {
	fakes := &serviceFakes{t: t, by: map[int]*serviceFake{}}
	c, renter := auctionCluster(t, []provOpts{{gpus: 1, bronze: 0.5}, {gpus: 1, bronze: 0.9}},
		nodetest.Options{Executors: fakes.executors, Configure: func(i int, cfg *node.Config) { dockerOnly(i, cfg); fastAttest(i, cfg) }})
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	j, err := renter.Renter().Submit(serviceJob("sick", "reauction_unhealthy: true\n"))
	if err != nil {
		t.Fatal(err)
	}
	waitJob(t, ctx, renter, j.ID, lease.JobRunning)
	var first *store.Lease
	if err := nodetest.WaitFor(ctx, "service healthy", func() bool {
		first = runningLease(t, renter, j.ID)
		return first != nil && first.Health == lease.HealthHealthy
	}); err != nil {
		t.Fatal(err)
	}
	var sick *serviceFake
	for _, m := range c.ByRole(node.RoleProvider) {
		if m.Node.P2P().ID().String() == first.Provider {
			sick = fakes.by[m.Index]
		}
	}
	if sick == nil {
		t.Fatal("no fake for the lease's provider")
	}
	sick.healthy.Store(false)
	if err := nodetest.WaitFor(ctx, "payments stopped for the unhealthy service", func() bool {
		cur, err := renter.Store().GetJob(j.ID)
		return err == nil && hasEvent(cur, "payment-stopped", "health check")
	}); err != nil {
		t.Fatal(err)
	}
	if err := nodetest.WaitFor(ctx, "service re-auctioned and running elsewhere", func() bool {
		l := runningLease(t, renter, j.ID)
		return l != nil && l.ID != first.ID && l.Provider != first.Provider
	}); err != nil {
		cur, _ := renter.Store().GetJob(j.ID)
		var evs []string
		if cur != nil {
			for _, ev := range cur.Events {
				evs = append(evs, ev.Kind+": "+ev.Message)
			}
		}
		t.Fatalf("%v; job events:\n%s", err, strings.Join(evs, "\n"))
	}
	old, err := renter.Store().GetLease(first.ID)
	if err != nil || old.State != lease.Failed || !strings.Contains(old.Reason, "unhealthy") {
		t.Fatalf("first lease: %+v %v", old, err)
	}
	if old.Health != lease.HealthUnhealthy {
		t.Errorf("first lease health %q", old.Health)
	}
}
