package nodetest

import (
	"fmt"
	"maps"
	"math"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/store"
)

// writeHeapProfile records what the live network holds. -memprofile
// cannot: it is written after every cluster has been torn down.
func writeHeapProfile(b *testing.B, path string) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		b.Fatal(err)
	}
}

// storeCost is the live heap one empty in-memory store holds. Every
// member owns one; reporting it apart separates the network's cost from
// the store's.
func storeCost(b *testing.B) uint64 {
	before, _ := liveHeap()
	db, err := store.Open("", store.Options{InMemory: true})
	if err != nil {
		b.Fatal(err)
	}
	after, _ := liveHeap()
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	return after - before
}

// cpuSample is the runtime's account of CPU time, in seconds.
type cpuSample struct{ idle, total float64 }

func cpuBusy() cpuSample {
	// The runtime brings its CPU classes up to date only during a GC.
	runtime.GC()
	s := []metrics.Sample{{Name: "/cpu/classes/idle:cpu-seconds"}, {Name: "/cpu/classes/total:cpu-seconds"}}
	metrics.Read(s)
	return cpuSample{s[0].Value.Float64(), s[1].Value.Float64()}
}

// since is the fraction of available CPU (GOMAXPROCS x wall time) that
// was busy between two samples: near 1 means the measurement ran on a
// saturated machine and latencies include queueing for a core.
func (s cpuSample) since(t cpuSample) float64 {
	total := s.total - t.total
	if total <= 0 {
		return 0
	}
	return 1 - (s.idle-t.idle)/total
}

// liveHeap is the live heap after a full collection, and the goroutine
// count.
func liveHeap() (uint64, int) {
	// Two cycles: finalizers queued by the first free more in the second.
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc, runtime.NumGoroutine()
}

// connStats is the mean and the largest number of open connections per
// member.
func connStats(c *Cluster) (mean float64, most int) {
	total := 0
	for _, m := range c.Members {
		k := len(m.Node.P2P().Host().Network().Conns())
		total += k
		most = max(most, k)
	}
	return float64(total) / float64(len(c.Members)), most
}

// percentile is the nearest-rank q-quantile of sorted durations.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// counterSums sums each named counter over every member's registry,
// gathering each registry once: a gather walks every collector of a
// node, and on a saturated 100-node process one gather per counter and
// member stalled the benchmark for minutes.
func counterSums(c *Cluster, names ...string) []float64 {
	sums := make([]float64, len(names))
	for _, m := range c.Members {
		mfs, err := m.Registry.Gather()
		if err != nil {
			continue
		}
		for _, mf := range mfs {
			i := slices.Index(names, mf.GetName())
			if i < 0 {
				continue
			}
			for _, met := range mf.GetMetric() {
				sums[i] += met.GetCounter().GetValue()
			}
		}
	}
	return sums
}

// labelSums sums a counter over every member's registry by the value of
// one of its labels.
func labelSums(c *Cluster, name, label string) map[string]float64 {
	sums := map[string]float64{}
	for _, m := range c.Members {
		mfs, err := m.Registry.Gather()
		if err != nil {
			continue
		}
		for _, mf := range mfs {
			if mf.GetName() != name {
				continue
			}
			for _, met := range mf.GetMetric() {
				for _, lp := range met.GetLabel() {
					if lp.GetName() == label {
						sums[lp.GetValue()] += met.GetCounter().GetValue()
					}
				}
			}
		}
	}
	return sums
}

// counterSum sums one counter over every member's registry.
func counterSum(c *Cluster, name string) float64 {
	return counterSums(c, name)[0]
}

// connsClosed sums the members' closed connections by reason, and yamux's
// reports of failed connections (part of remote_or_network), as
// "reason=count" pairs in reason order. (It reads the nodes' counts, not
// their registries: gathering 200 registries took minutes.)
func connsClosed(c *Cluster) string {
	sums, muxer := map[string]uint64{}, map[string]uint64{}
	for _, m := range c.Members {
		for r, k := range m.Node.P2P().ConnsClosed() {
			sums[r] += k
		}
		for r, k := range m.Node.P2P().MuxerFailures() {
			muxer["yamux_"+r] += k
		}
	}
	maps.Copy(sums, muxer)
	var parts []string
	for _, r := range slices.Sorted(maps.Keys(sums)) {
		parts = append(parts, fmt.Sprintf("%s=%d", r, sums[r]))
	}
	return strings.Join(parts, " ")
}
