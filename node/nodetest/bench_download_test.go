package nodetest

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/node"
	"github.com/idlegrid/idlegrid/node/executor"
	"github.com/idlegrid/idlegrid/node/lease"
)

// BenchmarkResultDownload measures a renter downloading a lease's output
// from its provider over /idlegrid/job/1.0.0 on real libp2p hosts on
// 127.0.0.1, TCP and QUIC (one cluster each: bootstrap, provider, renter).
// The provider's scripted executor writes execbench.size bytes of
// incompressible data (fill:out.bin=N); the renter then downloads the
// output tar execbench.dlreps times with JobResult, removing its copy in
// between. JobResult is what `idlegrid job result` does: the download
// (256 KiB frames), an fsync and the CID check of the whole file.
//
// MBps is output bytes / JobResult time (MB = 10^6 bytes); verify_ms is
// the CID check of the same file alone, timed right after each download,
// and wire_MBps the throughput without it (an estimate: what is left of
// the download is the stream, the writes and the fsync).
//
//	go test ./node/nodetest -run '^$' -bench BenchmarkResultDownload -benchtime=1x -timeout 20m
func BenchmarkResultDownload(b *testing.B) {
	for _, tr := range []string{"tcp", "quic"} {
		b.Run("transport="+tr, func(b *testing.B) { benchResultDownload(b, tr) })
	}
}

func benchResultDownload(b *testing.B, transport string) {
	c := New(b, 3, Options{Transport: transport})
	ctx, cancel := context.WithTimeout(b.Context(), 10*time.Minute)
	defer cancel()
	if err := c.WaitReady(ctx); err != nil {
		b.Fatal(err)
	}
	renter := c.ByRole(node.RoleRenter)[0].Node
	prov := c.ByRole(node.RoleProvider)[0]
	if !strings.Contains(prov.Addr.String(), "/127.0.0.1/") || !strings.Contains(prov.Addr.String(), map[string]string{"tcp": "/tcp/", "quic": "/quic-v1"}[transport]) {
		b.Fatalf("provider listens on %s", prov.Addr)
	}
	if err := WaitSearchable(ctx, renter, 1); err != nil {
		b.Fatal(err)
	}
	spec := fmt.Sprintf("name: output\nmodule: %s\ncommand: [\"fill:out.bin=%d\"]\ngpus: 1\ngpu: [a10]\nmax_price: 5\nduration: 1m\nbid_window: 3s\n", DemoModule, *dlSize)
	j, err := renter.Renter().Submit([]byte(spec))
	if err != nil {
		b.Fatal(err)
	}
	id := j.ID
	if err := WaitFor(ctx, "the job's end", func() bool {
		j, err = renter.Store().GetJob(id)
		return err == nil && j.State != lease.JobAuctioning && j.State != lease.JobRunning
	}); err != nil {
		b.Fatal(err)
	}
	if j.State != lease.JobCompleted {
		b.Fatalf("job %s: %s", j.State, j.Reason)
	}
	// The renter downloaded the output to verify the job: start cold.
	if _, path, err := renter.Renter().Result(ctx, id, ""); err == nil {
		_ = os.Remove(path)
	}
	var dl, verify []time.Duration
	var size int64
	for b.Loop() {
		for range *dlReps {
			before := renter.Renter().ResultBytesFetched()
			t0 := time.Now()
			l, path, err := renter.Renter().Result(ctx, id, "")
			d := time.Since(t0)
			if err != nil {
				b.Fatal(err)
			}
			if got := renter.Renter().ResultBytesFetched() - before; got != l.OutputSize {
				b.Fatalf("fetched %d bytes, the output has %d", got, l.OutputSize)
			}
			size = l.OutputSize
			t1 := time.Now()
			if err := executor.VerifyOutput(executor.Output{CID: l.OutputCID, Size: l.OutputSize, Path: path}); err != nil {
				b.Fatal(err)
			}
			verify = append(verify, time.Since(t1))
			dl = append(dl, d)
			if err := os.Remove(path); err != nil {
				b.Fatal(err)
			}
		}
	}
	conns := renter.P2P().Host().Network().ConnsToPeer(prov.Node.ID())
	var used []string
	for _, cn := range conns {
		used = append(used, cn.RemoteMultiaddr().String())
	}
	wire := make([]time.Duration, len(dl))
	for i := range dl {
		wire[i] = dl[i] - verify[i]
	}
	for _, ds := range [][]time.Duration{dl, verify, wire} {
		slices.Sort(ds)
	}
	mbps := func(d time.Duration) float64 { return float64(size) / 1e6 / d.Seconds() }
	// The median time is the median throughput; p90 time is p10 throughput.
	b.ReportMetric(mbps(percentile(dl, 0.5)), "MBps")
	b.ReportMetric(mbps(percentile(dl, 0.9)), "MBps_p10")
	b.ReportMetric(ms(percentile(dl, 0.5)), "download_p50_ms")
	b.ReportMetric(ms(percentile(verify, 0.5)), "verify_p50_ms")
	b.ReportMetric(mbps(percentile(wire, 0.5)), "wire_MBps")
	b.ReportMetric(float64(size), "bytes")
	b.Logf("%s: %d downloads of %d bytes over %v; download ms %v, verify ms %v", transport, len(dl), size, used, msFloats(dl), msFloats(verify))
}
