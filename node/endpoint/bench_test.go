package endpoint

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/node/modelstub"
)

// The endpoint's overhead over a direct connection to one replica: the
// same one-token completion, asked of the model server directly and
// through an endpoint over it (both on loopback, keep-alive). The
// difference of the p50s is what the endpoint adds (docs/benchmarks.md).
//
//	go test -run '^$' -bench 'BenchmarkOverhead' -benchtime 3000x ./node/endpoint

func BenchmarkOverheadDirect(b *testing.B) {
	srv := httptest.NewServer(modelstub.Handler(modelstub.Config{Name: "d"}))
	defer srv.Close()
	benchCompletions(b, srv.Listener.Addr().String())
}

func BenchmarkOverheadEndpoint(b *testing.B) {
	srv := httptest.NewServer(modelstub.Handler(modelstub.Config{Name: "d"}))
	defer srv.Close()
	e, err := New(Config{Listen: "127.0.0.1:0"}, Deps{})
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = e.Run(b.Context()) }()
	defer e.Close()
	e.SetReplicas([]Replica{{ID: "r", Dial: dialer(srv.Listener.Addr().String())}})
	benchCompletions(b, e.Addr().String())
}

func benchCompletions(b *testing.B, addr string) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	url := "http://" + addr + "/v1/completions"
	ask := func() {
		resp, err := client.Post(url, "application/json", strings.NewReader(`{"prompt":"hi","max_tokens":1}`))
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	ask() // the connection
	lats := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		ask()
		lats = append(lats, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(lats)
	b.ReportMetric(quantileMs(lats, 0.50)*1000, "p50-µs")
	b.ReportMetric(quantileMs(lats, 0.95)*1000, "p95-µs")
}
