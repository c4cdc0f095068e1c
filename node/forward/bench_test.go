package forward

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/idlegrid/idlegrid/p2p"
)

// tcpPair is a provider and a renter p2p node on real libp2p hosts
// listening on 127.0.0.1 (TCP only), connected, the provider serving
// Proto to the given target.
func tcpPair(b *testing.B, target string) (prov, rent *p2p.Node) {
	b.Helper()
	nodes := make([]*p2p.Node, 2)
	for i := range nodes {
		sk, _, err := crypto.GenerateEd25519Key(nil)
		if err != nil {
			b.Fatal(err)
		}
		cfg := p2p.DefaultConfig()
		cfg.Identity = sk
		cfg.ListenAddrs = []ma.Multiaddr{ma.StringCast("/ip4/127.0.0.1/tcp/0")}
		cfg.NATTraversal = false
		n, err := p2p.New(cfg, p2p.Deps{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = n.Close() })
		nodes[i] = n
	}
	prov, rent = nodes[0], nodes[1]
	if err := rent.Host().Connect(b.Context(), peer.AddrInfo{ID: prov.ID(), Addrs: prov.ListenAddrs()}); err != nil {
		b.Fatal(err)
	}
	srv, err := NewServer(ServerConfig{}, ServerDeps{Resolve: func(context.Context, peer.ID, Header) (Target, error) {
		return Target{Addr: target}, nil
	}})
	if err != nil {
		b.Fatal(err)
	}
	prov.HandleTunnel(Proto, "idlegrid.forward", TunnelLimits, srv.Handle)
	return prov, rent
}

func benchForwarder(b *testing.B, prov, rent *p2p.Node) *Forwarder {
	b.Helper()
	f, err := NewForwarder(ForwarderConfig{Listen: "127.0.0.1:0", Port: 80}, ForwarderDeps{
		Dest: func(context.Context) (peer.ID, string, error) { return prov.ID(), "bench", nil },
		Open: func(ctx context.Context, p peer.ID, hdr []byte) (io.ReadWriteCloser, error) {
			return rent.OpenTunnel(ctx, p, Proto, hdr, TunnelLimits)
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = f.Run(context.Background()) }()
	b.Cleanup(func() { _ = f.Close() })
	return f
}

// BenchmarkServiceLatency times the same small HTTP request straight to
// the service on loopback and through the tunnel (libp2p over TCP on
// 127.0.0.1), alternating, on kept-alive connections, and reports both
// medians and 95th percentiles, their ratios and the added median.
func BenchmarkServiceLatency(b *testing.B) { benchLatency(b, false) }

// BenchmarkServiceLatencyNewConn is BenchmarkServiceLatency with a new
// connection per request: through the tunnel, each one opens a stream
// and waits for the provider's reply before the request goes out.
func BenchmarkServiceLatencyNewConn(b *testing.B) { benchLatency(b, true) }

func benchLatency(b *testing.B, newConn bool) {
	svc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok"))
	}))
	defer svc.Close()
	prov, rent := tcpPair(b, svc.Listener.Addr().String())
	f := benchForwarder(b, prov, rent)
	direct := &http.Client{Transport: &http.Transport{DisableKeepAlives: newConn}}
	tunnel := &http.Client{Transport: &http.Transport{DisableKeepAlives: newConn}}
	get := func(c *http.Client, url string) time.Duration {
		start := time.Now()
		resp, err := c.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return time.Since(start)
	}
	du, tu := "http://"+svc.Listener.Addr().String()+"/", "http://"+f.Addr().String()+"/"
	for range 50 { // warm both paths: connections, buffers
		get(direct, du)
		get(tunnel, tu)
	}
	var ds, ts []time.Duration
	b.ResetTimer()
	for range b.N {
		ds = append(ds, get(direct, du))
		ts = append(ts, get(tunnel, tu))
	}
	b.StopTimer()
	q := func(s []time.Duration, p float64) float64 { slices.Sort(s); return quantileMs(s, p) }
	d50, d95, t50, t95 := q(ds, 0.5), q(ds, 0.95), q(ts, 0.5), q(ts, 0.95)
	b.ReportMetric(d50, "direct_p50_ms")
	b.ReportMetric(d95, "direct_p95_ms")
	b.ReportMetric(t50, "tunnel_p50_ms")
	b.ReportMetric(t95, "tunnel_p95_ms")
	b.ReportMetric(t50-d50, "added_p50_ms")
	b.ReportMetric(t50/d50, "p50_ratio")
	b.ReportMetric(t95/d95, "p95_ratio")
}

// BenchmarkTunnelThroughput downloads a 64 MiB HTTP body through the
// tunnel; the MB/s column is the tunnel's throughput.
func BenchmarkTunnelThroughput(b *testing.B) {
	const size = 64 << 20
	body := make([]byte, size)
	for i := range body {
		body[i] = byte(i*7 + i/251)
	}
	svc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(size))
		_, _ = w.Write(body)
	}))
	defer svc.Close()
	prov, rent := tcpPair(b, svc.Listener.Addr().String())
	f := benchForwarder(b, prov, rent)
	c := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	url := "http://" + f.Addr().String() + "/"
	b.SetBytes(size)
	b.ResetTimer()
	for range b.N {
		resp, err := c.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || n != size {
			b.Fatalf("read %d of %d bytes: %v", n, size, err)
		}
	}
}
