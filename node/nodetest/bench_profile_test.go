package nodetest

import (
	"fmt"
	"net/http"
	_ "net/http/pprof" // for -auctionbench.pprof
	"os"
	"runtime/pprof"
	"sync"
	"testing"
	"time"
)

// servePprof serves net/http/pprof where -auctionbench.pprof asks, until
// the benchmark ends: to look at a network that will not form while it is
// still trying.
func servePprof(b *testing.B) {
	if *auctionPprof == "" {
		return
	}
	srv := &http.Server{Addr: *auctionPprof, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.ListenAndServe()
	}()
	b.Cleanup(func() {
		_ = srv.Close()
		<-done
	})
}

// startFormProfile starts the CPU profile -auctionbench.formprofile asks
// for; the returned stop may be called more than once.
func startFormProfile(b *testing.B, n int) (stop func()) {
	if *auctionFormProfile == "" {
		return func() {}
	}
	f, err := os.Create(fmt.Sprintf("%s.%d", *auctionFormProfile, n))
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			pprof.StopCPUProfile()
			_ = f.Close()
			progress("nodes=%d: CPU profile written to %s", n, f.Name())
		})
	}
	time.AfterFunc(3*time.Minute, stop)
	return stop
}
