package forward

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/node/roomtest"
	"github.com/idlegrid/idlegrid/p2p"
)

const testLease = "lease-1"

// tunnelEnv is a provider serving one lease's service (an HTTP server on
// loopback) to its renter, and a third peer that is not the renter.
type tunnelEnv struct {
	provider, renter, stranger *roomtest.Peer
	svc                        *httptest.Server
	done                       chan struct{}
	resolves                   atomic.Int64
}

func newTunnelEnv(t *testing.T) *tunnelEnv {
	t.Helper()
	ps := roomtest.Peers(t, 3)
	e := &tunnelEnv{provider: ps[0], renter: ps[1], stranger: ps[2], done: make(chan struct{})}
	e.svc = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello %s", r.URL.Path)
	}))
	t.Cleanup(e.svc.Close)
	srv, err := NewServer(ServerConfig{}, ServerDeps{Resolve: e.resolve})
	if err != nil {
		t.Fatal(err)
	}
	e.provider.P2P.HandleTunnel(Proto, "idlegrid.forward", TunnelLimits, srv.Handle)
	return e
}

func (e *tunnelEnv) resolve(_ context.Context, from peer.ID, h Header) (Target, error) {
	e.resolves.Add(1)
	switch {
	case h.LeaseID != testLease:
		return Target{}, fmt.Errorf("%w: lease %s", ErrNotFound, h.LeaseID)
	case from != e.renter.ID:
		return Target{}, fmt.Errorf("%w: not the lease's renter", ErrRefused)
	case h.Port != 80:
		return Target{}, fmt.Errorf("%w: port %d is not a service port", ErrRefused, h.Port)
	}
	return Target{Addr: e.svc.Listener.Addr().String(), Done: e.done}, nil
}

func (e *tunnelEnv) forwarder(t *testing.T, from *roomtest.Peer, port uint16, dest Dest) *Forwarder {
	t.Helper()
	if dest == nil {
		dest = func(context.Context) (peer.ID, string, error) { return e.provider.ID, testLease, nil }
	}
	f, err := NewForwarder(ForwarderConfig{Listen: "127.0.0.1:0", Port: port, Reconnect: 2 * time.Second}, ForwarderDeps{
		Dest: dest,
		Open: func(ctx context.Context, p peer.ID, hdr []byte) (io.ReadWriteCloser, error) {
			return from.P2P.OpenTunnel(ctx, p, Proto, hdr, TunnelLimits)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	roomtest.Run(t, f.Run)
	return f
}

func TestTunnelHTTP(t *testing.T) {
	e := newTunnelEnv(t)
	f := e.forwarder(t, e.renter, 80, nil)
	client := &http.Client{Timeout: 10 * time.Second}
	const n = 5
	for i := range n {
		resp, err := client.Get(fmt.Sprintf("http://%s/r%d", f.Addr(), i))
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || string(body) != fmt.Sprintf("hello /r%d", i) {
			t.Fatalf("body %q, %v", body, err)
		}
	}
	roomtest.Eventually(t, 5*time.Second, "requests counted", func() bool { return f.Stats().Requests >= n })
	s := f.Stats()
	if s.P50Ms <= 0 || s.P95Ms < s.P50Ms || s.RatePerSec <= 0 || s.BytesIn == 0 || s.BytesOut == 0 || s.Conns == 0 {
		t.Errorf("stats %+v", s)
	}
}

func TestTunnelRefusesStranger(t *testing.T) {
	e := newTunnelEnv(t)
	f := e.forwarder(t, e.stranger, 80, nil)
	if _, err := f.openOnce(t.Context()); !errors.Is(err, ErrRefused) {
		t.Fatalf("stranger's tunnel: %v, want ErrRefused", err)
	}
	// Through the listener: the connection is dropped without bytes.
	c, err := net.Dial("tcp", f.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET / HTTP/1.0\r\n\r\n")
	if b, _ := io.ReadAll(c); len(b) != 0 {
		t.Errorf("stranger got %q", b)
	}
	roomtest.Eventually(t, 5*time.Second, "failure counted", func() bool { return f.Stats().Failed == 1 })
	// The renter asking for a port the spec does not expose is refused too.
	g := e.forwarder(t, e.renter, 81, nil)
	if _, err := g.openOnce(t.Context()); !errors.Is(err, ErrRefused) {
		t.Fatalf("unlisted port: %v, want ErrRefused", err)
	}
}

// TestTunnelClosedWithLease: a lease that ends closes its open tunnels.
func TestTunnelClosedWithLease(t *testing.T) {
	e := newTunnelEnv(t)
	f := e.forwarder(t, e.renter, 80, nil)
	c, err := net.Dial("tcp", f.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	fmt.Fprintf(c, "GET /a HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	close(e.done)
	if _, err := br.ReadByte(); err == nil {
		t.Fatal("tunnel still open after the lease ended")
	}
}

// TestTunnelReconnects: a connection waits for its tunnel while the
// provider cannot be found, and goes through once it can.
func TestTunnelReconnects(t *testing.T) {
	e := newTunnelEnv(t)
	var calls atomic.Int64
	f := e.forwarder(t, e.renter, 80, func(context.Context) (peer.ID, string, error) {
		if calls.Add(1) < 3 {
			return "", "", errors.New("no lease yet")
		}
		return e.provider.ID, testLease, nil
	})
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + f.Addr().String() + "/late")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "hello /late" || calls.Load() < 3 {
		t.Fatalf("body %q after %d tries", body, calls.Load())
	}
}

// TestTunnelMalformedHeader: a header that does not decode resets the
// stream before any resolver runs.
func TestTunnelMalformedHeader(t *testing.T) {
	e := newTunnelEnv(t)
	st, err := e.renter.P2P.OpenTunnel(t.Context(), e.provider.ID, Proto, []byte("\x09junk"), TunnelLimits)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if b, err := io.ReadAll(st); err == nil || len(b) != 0 {
		t.Errorf("malformed header answered %q, %v", b, err)
	}
	if e.resolves.Load() != 0 {
		t.Error("resolver ran for a malformed header")
	}
	if _, err := e.renter.P2P.OpenTunnel(t.Context(), e.provider.ID, Proto, []byte(strings.Repeat("x", 300)), p2p.TunnelLimits{MaxHeader: 256}); err == nil {
		t.Error("OpenTunnel sent an over-long header")
	}
}

func TestQuantile(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	cases := []struct {
		name string
		in   []time.Duration
		q    float64
		want float64
	}{
		{"empty", nil, 0.5, 0},
		{"one", ms(7), 0.95, 7},
		{"median_of_four", ms(1, 2, 3, 4), 0.5, 2},
		{"p95_of_twenty", ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20), 0.95, 19},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := quantileMs(tc.in, tc.q); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
