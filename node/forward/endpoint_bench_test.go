package forward

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/node/endpoint"
	"github.com/idlegrid/idlegrid/node/modelstub"
)

// BenchmarkEndpointOverhead times the same one-token completion through a
// forward to one replica (the direct connection a renter had before
// issue 30) and through a service endpoint over that replica, both over
// the libp2p tunnel on loopback TCP, alternating, on kept-alive
// connections, and reports both medians and 95th percentiles and what
// the endpoint adds (docs/benchmarks.md, issue 30).
func BenchmarkEndpointOverhead(b *testing.B) {
	svc := httptest.NewServer(modelstub.Handler(modelstub.Config{Name: "bench"}))
	defer svc.Close()
	prov, rent := tcpPair(b, svc.Listener.Addr().String())
	f := benchForwarder(b, prov, rent)
	ep, err := endpoint.New(endpoint.Config{Listen: "127.0.0.1:0"}, endpoint.Deps{})
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = ep.Run(context.Background()) }()
	defer ep.Close()
	open := func(ctx context.Context, p peer.ID, hdr []byte) (io.ReadWriteCloser, error) {
		return rent.OpenTunnel(ctx, p, Proto, hdr, TunnelLimits)
	}
	ep.SetReplicas([]endpoint.Replica{{ID: "bench", Dial: func(ctx context.Context) (net.Conn, error) {
		st, err := Dial(ctx, open, prov.ID(), "bench", 80)
		if err != nil {
			return nil, err
		}
		return endpoint.StreamConn(st), nil
	}}})
	client := &http.Client{}
	ask := func(url string) time.Duration {
		start := time.Now()
		resp, err := client.Post(url, "application/json", strings.NewReader(`{"prompt":"hi","max_tokens":1}`))
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("%s: %s", url, resp.Status)
		}
		return time.Since(start)
	}
	fu, eu := "http://"+f.Addr().String()+"/v1/completions", "http://"+ep.Addr().String()+"/v1/completions"
	for range 50 {
		ask(fu)
		ask(eu)
	}
	var fs, es []time.Duration
	b.ResetTimer()
	for range b.N {
		fs = append(fs, ask(fu))
		es = append(es, ask(eu))
	}
	b.StopTimer()
	q := func(s []time.Duration, p float64) float64 { slices.Sort(s); return quantileMs(s, p) }
	f50, f95, e50, e95 := q(fs, 0.5), q(fs, 0.95), q(es, 0.5), q(es, 0.95)
	b.ReportMetric(f50, "forward_p50_ms")
	b.ReportMetric(f95, "forward_p95_ms")
	b.ReportMetric(e50, "endpoint_p50_ms")
	b.ReportMetric(e95, "endpoint_p95_ms")
	b.ReportMetric(e50-f50, "added_p50_ms")
	b.ReportMetric(e95-f95, "added_p95_ms")
}
