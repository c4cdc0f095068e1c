package nodetest_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/node"
	"github.com/idlegrid/idlegrid/node/executor"
	"github.com/idlegrid/idlegrid/node/executor/executortest"
	"github.com/idlegrid/idlegrid/node/lease"
	"github.com/idlegrid/idlegrid/node/modelstub"
	"github.com/idlegrid/idlegrid/node/nodetest"
	"github.com/idlegrid/idlegrid/store"
)

// modelFake is a scripted "docker" runtime whose service is the test
// model server (package modelstub) on loopback.
type modelFake struct {
	*executortest.Fake
	srv *httptest.Server
}

func (f *modelFake) Endpoint(_ context.Context, _ executor.Handle, _ uint16) (string, error) {
	return f.srv.Listener.Addr().String(), nil
}

// modelExecutors gives each provider a model server named after its
// member index, spending tokenDelay on each token.
func modelExecutors(t *testing.T, tokenDelay time.Duration) func(i int, dir string) []executor.Executor {
	return func(i int, dir string) []executor.Executor {
		f := &modelFake{Fake: executortest.NewFake(filepath.Join(dir, "fake"), nil)}
		f.Runtime = "docker"
		f.srv = httptest.NewServer(modelstub.Handler(modelstub.Config{Name: fmt.Sprintf("m%d", i), TokenDelay: tokenDelay}))
		t.Cleanup(f.srv.Close)
		return []executor.Executor{f}
	}
}

func replicatedServiceJob(name string, replicas int) []byte {
	return fmt.Appendf(nil, "name: %s\nkind: service\nimage: %s\ncommand: [svc, hang]\nports: [8080]\nreplicas: %d\n"+
		"health: http:8080/healthz\nhealth_interval: 500ms\nhealth_threshold: 2\ngpus: 1\ngpu: [a10]\nmax_price: 5\nduration: 1h\nbid_window: 3s\n",
		name, serviceImage, replicas)
}

// servingLeases are the job's running, healthy leases.
func servingLeases(t *testing.T, r *node.Node, jobID string) []*store.Lease {
	t.Helper()
	j, err := r.Store().GetJob(jobID)
	if err != nil {
		t.Fatal(err)
	}
	var out []*store.Lease
	for _, id := range j.Leases {
		if l, err := r.Store().GetLease(id); err == nil && l.State == lease.Running && l.Health == lease.HealthHealthy {
			out = append(out, l)
		}
	}
	return out
}

// streamCompletion asks addr for a streamed completion of n tokens. It
// reports whether any byte of the answer came before a failure, which
// tells a request the endpoint could have retried from one it could not.
func streamCompletion(client *http.Client, addr string, n int) (ok, gotBytes bool, err error) {
	body := fmt.Sprintf(`{"model":"stub","messages":[{"role":"user","content":"one two three"}],"max_tokens":%d,"stream":true}`, n)
	resp, err := client.Post("http://"+addr+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		return false, false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return false, false, fmt.Errorf("status %s: %s", resp.Status, b)
	}
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if len(line) > 0 {
			gotBytes = true
		}
		if strings.HasPrefix(line, "data: [DONE]") {
			return true, true, nil
		}
		if err != nil {
			return false, gotBytes, err
		}
	}
}

// TestReplicatedServiceEndpoint: a 3-replica service runs on three
// distinct providers; the renter's one endpoint balances requests over
// them and counts exactly the tokens the model servers' usage reports;
// a provider cut off mid-stream loses no request that had not yet been
// answered, the endpoint answers throughout, and the lost replica is
// replaced on the fourth provider within 30 s.
func TestReplicatedServiceEndpoint(t *testing.T) {
	prov := provOpts{gpus: 1, bronze: 0.5}
	c, renter := auctionCluster(t, []provOpts{prov, prov, prov, prov},
		nodetest.Options{Executors: modelExecutors(t, 10*time.Millisecond), Configure: func(i int, cfg *node.Config) {
			dockerOnly(i, cfg)
			replicaAttest(i, cfg)
			cfg.Market.ProviderTimeout = 5 * time.Second
		}})
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	j, err := renter.Renter().Submit(replicatedServiceJob("llm", 3))
	if err != nil {
		t.Fatal(err)
	}
	var serving []*store.Lease
	if err := nodetest.WaitFor(ctx, "three healthy replicas", func() bool {
		serving = servingLeases(t, renter, j.ID)
		return len(serving) == 3
	}); err != nil {
		cur, _ := renter.Store().GetJob(j.ID)
		for _, ev := range cur.Events {
			t.Logf("  %s: %s", ev.Kind, ev.Message)
		}
		t.Fatal(err)
	}
	providers := map[string]bool{}
	for _, l := range serving {
		providers[l.Provider] = true
	}
	if len(providers) != 3 {
		t.Fatalf("replicas on %d distinct providers, want 3", len(providers))
	}
	ep, err := renter.Renter().StartEndpoint(j.ID, "127.0.0.1:0", 8080)
	if err != nil {
		t.Fatal(err)
	}
	if err := nodetest.WaitFor(ctx, "endpoint knows the three replicas", func() bool {
		e, ok := renter.Renter().ServiceEndpoint(j.ID)
		return ok && len(e.Replicas) == 3
	}); err != nil {
		t.Fatal(err)
	}

	// Balanced, and tokens counted exactly: non-streamed and streamed.
	client := &http.Client{Timeout: 30 * time.Second}
	var wantTokens uint64
	per := map[string]int{}
	for i := range 12 {
		n := i%4 + 1
		var by string
		if i%2 == 0 {
			resp, err := client.Post("http://"+ep.Listen+"/v1/completions", "application/json",
				strings.NewReader(fmt.Sprintf(`{"prompt":"a b c d","max_tokens":%d}`, n)))
			if err != nil {
				t.Fatal(err)
			}
			var v struct{ Usage modelstub.Usage }
			if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			by = resp.Header.Get("X-Idlegrid-Replica")
			wantTokens += uint64(v.Usage.TotalTokens)
		} else {
			if ok, _, err := streamCompletion(client, ep.Listen, n); !ok {
				t.Fatal(err)
			}
			wantTokens += uint64(n + 3)
			by = "stream"
		}
		per[by]++
	}
	e, _ := renter.Renter().ServiceEndpoint(j.ID)
	if err := nodetest.WaitFor(ctx, "12 answers recorded", func() bool {
		e, _ = renter.Renter().ServiceEndpoint(j.ID)
		return e.Total.Requests >= 12 && e.Total.InFlight == 0
	}); err != nil {
		t.Fatal(err)
	}
	if e.Total.Requests != 12 || e.Total.Tokens() != wantTokens {
		t.Fatalf("endpoint total %+v, want 12 requests and %d tokens", e.Total, wantTokens)
	}
	var sum uint64
	for _, r := range e.Replicas {
		sum += r.Tokens()
		if r.Requests != 4 {
			t.Errorf("replica %d served %d requests, want 4 (balanced)", r.Slot, r.Requests)
		}
	}
	if sum != wantTokens {
		t.Errorf("replicas' tokens sum to %d, want %d", sum, wantTokens)
	}
	if err := nodetest.WaitFor(ctx, "$/1M tokens reported", func() bool {
		e, _ = renter.Renter().ServiceEndpoint(j.ID)
		return e.Total.SpentUSD > 0 && e.Total.USDPerMTok > 0
	}); err != nil {
		t.Fatal(err)
	}
	if want := e.Total.SpentUSD / float64(e.Total.Tokens()) * 1e6; e.Total.USDPerMTok != want {
		t.Errorf("$/1M tokens %v, want %v", e.Total.USDPerMTok, want)
	}

	// Load through the endpoint while one replica's provider is cut.
	var okN, lostRetriable, cut atomic.Int64
	var firstErr atomic.Value
	var latMu sync.Mutex
	var lats []timedLatency
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				t0 := time.Now()
				ok, gotBytes, err := streamCompletion(client, ep.Listen, 20)
				latMu.Lock()
				lats = append(lats, timedLatency{t0, time.Since(t0)})
				latMu.Unlock()
				switch {
				case ok:
					okN.Add(1)
				case gotBytes:
					cut.Add(1) // cut mid-stream: not retriable
				default:
					lostRetriable.Add(1)
					firstErr.CompareAndSwap(nil, err)
				}
			}
		})
	}
	if err := nodetest.WaitFor(ctx, "load flowing", func() bool { return okN.Load() >= 12 }); err != nil {
		t.Fatal(err)
	}
	// The victim is a replica with a stream in flight.
	var victim string
	if err := nodetest.WaitFor(ctx, "a replica streaming", func() bool {
		e, _ := renter.Renter().ServiceEndpoint(j.ID)
		for _, r := range e.Replicas {
			if r.Live && r.InFlight > 0 {
				victim = r.Provider
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatal(err)
	}
	var victimIdx int
	for _, m := range c.ByRole(node.RoleProvider) {
		if m.Node.P2P().ID().String() == victim {
			victimIdx = m.Index
		}
	}
	cutAt := time.Now()
	if err := c.Cut(victimIdx); err != nil {
		t.Fatal(err)
	}
	before := okN.Load()
	var replacedIn time.Duration
	if err := nodetest.WaitFor(ctx, "replica replaced", func() bool {
		for _, l := range servingLeases(t, renter, j.ID) {
			if !providers[l.Provider] {
				replacedIn = time.Since(cutAt)
				return true
			}
		}
		return false
	}); err != nil {
		cur, _ := renter.Store().GetJob(j.ID)
		for _, ev := range cur.Events {
			t.Logf("  %s: %s", ev.Kind, ev.Message)
		}
		t.Fatal(err)
	}
	answeredDuring := okN.Load() - before
	// A few more answers once the new replica serves.
	after := okN.Load()
	if err := nodetest.WaitFor(ctx, "answers after the replacement", func() bool { return okN.Load() >= after+12 }); err != nil {
		t.Fatal(err)
	}
	close(stop)
	wg.Wait()
	var before95, during95 []time.Duration
	for _, l := range lats {
		switch {
		case l.at.Before(cutAt):
			before95 = append(before95, l.d)
		case l.at.Before(cutAt.Add(replacedIn)):
			during95 = append(during95, l.d)
		}
	}
	t.Logf("replica replaced in %s; %d answers during, %d streams cut mid-answer, %d lost before any byte; "+
		"p95 of a 20-token stream %s before the cut, %s until the replacement",
		replacedIn.Round(100*time.Millisecond), answeredDuring, cut.Load(), lostRetriable.Load(), p95(before95), p95(during95))
	if n := lostRetriable.Load(); n > 0 {
		t.Errorf("%d requests lost before any byte of their answer (retriable): first %v", n, firstErr.Load())
	}
	if answeredDuring == 0 {
		t.Error("the endpoint answered nothing while the replica was replaced")
	}
	if replacedIn > 30*time.Second {
		t.Errorf("replica replaced in %s, want within 30s", replacedIn)
	}
	e, _ = renter.Renter().ServiceEndpoint(j.ID)
	t.Logf("endpoint: %d requests, %d attempts failed before answering and sent again (%d retries), %d cut",
		e.Total.Requests, e.Total.Errors, e.Total.Retries, e.Total.Broken)
	live := 0
	for _, r := range e.Replicas {
		if r.Live {
			live++
		}
	}
	if live != 3 || int64(e.Total.Broken) != cut.Load() {
		t.Errorf("after the replacement: %d live replicas, %d broken (clients saw %d cut)", live, e.Total.Broken, cut.Load())
	}

	// spend reports the service's tokens as the endpoint counted them,
	// while it serves and after it stopped (saved to the job). An answer
	// is counted just after its client read it: wait for the counts to
	// agree rather than read them once.
	spendOf := func() (tokens uint64, ok bool) {
		s, err := renter.Renter().Spend(time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range s.Services {
			if v.Job != j.ID {
				continue
			}
			got := v.PromptTokens + v.CompletionTokens
			if v.SpentUSD <= 0 || v.USDPerMTok != v.SpentUSD/float64(got)*1e6 {
				t.Errorf("spend: %+v, want $/1M tokens its pay over its tokens", v)
			}
			return got, true
		}
		return 0, false
	}
	var served uint64
	if err := nodetest.WaitFor(ctx, "spend to report the endpoint's tokens", func() bool {
		e, _ = renter.Renter().ServiceEndpoint(j.ID)
		got, ok := spendOf()
		served = e.Total.Tokens()
		return ok && got == served
	}); err != nil {
		t.Fatal(err)
	}
	if err := renter.Renter().StopEndpoint(j.ID); err != nil {
		t.Fatal(err)
	}
	if got, ok := spendOf(); !ok || got != served {
		t.Errorf("spend after the endpoint stopped: %d tokens (listed %v), want %d", got, ok, served)
	}
	saved, err := renter.Store().GetJob(j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if saved.PromptTokens+saved.CompletionTokens != served {
		t.Errorf("the job saved %d prompt and %d completion tokens, want %d in all", saved.PromptTokens, saved.CompletionTokens, served)
	}
}

type timedLatency struct {
	at time.Time
	d  time.Duration
}

func p95(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[min(len(ds)-1, len(ds)*95/100)].Round(time.Millisecond)
}

// TestReplicatedServiceScales: a service with replicas 1..2 and a target
// of one request in flight per replica gets a second replica, on another
// provider, while four clients stream through its endpoint, and goes back
// to one when they stop.
func TestReplicatedServiceScales(t *testing.T) {
	prov := provOpts{gpus: 1, bronze: 0.5}
	_, renter := auctionCluster(t, []provOpts{prov, prov, prov},
		nodetest.Options{Executors: modelExecutors(t, 20*time.Millisecond), Configure: func(i int, cfg *node.Config) {
			dockerOnly(i, cfg)
			replicaAttest(i, cfg)
		}})
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	spec := string(replicatedServiceJob("scaled", 1)) + "min_replicas: 1\nmax_replicas: 2\nscale_in_flight: 1\nscale_window: 2s\n"
	j, err := renter.Renter().Submit([]byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	if err := nodetest.WaitFor(ctx, "one healthy replica", func() bool { return len(servingLeases(t, renter, j.ID)) == 1 }); err != nil {
		t.Fatal(err)
	}
	ep, err := renter.Renter().StartEndpoint(j.ID, "127.0.0.1:0", 8080)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 30 * time.Second}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var failed atomic.Int64
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if ok, _, _ := streamCompletion(client, ep.Listen, 50); !ok {
					failed.Add(1)
				}
			}
		})
	}
	var two []*store.Lease
	err = nodetest.WaitFor(ctx, "scaled up to two replicas", func() bool {
		two = servingLeases(t, renter, j.ID)
		return len(two) == 2
	})
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if two[0].Provider == two[1].Provider {
		t.Error("both replicas on one provider")
	}
	if err := nodetest.WaitFor(ctx, "scaled back down to one replica", func() bool {
		return len(servingLeases(t, renter, j.ID)) == 1
	}); err != nil {
		t.Fatal(err)
	}
	cur, _ := renter.Store().GetJob(j.ID)
	if !hasEvent(cur, "scaled", "adding replica 1") || !hasEvent(cur, "scaled", "removing replica 1") || cur.State != lease.JobRunning {
		for _, ev := range cur.Events {
			t.Logf("  %s: %s", ev.Kind, ev.Message)
		}
		t.Errorf("job %s without both scaling events", cur.State)
	}
	if n := failed.Load(); n > 0 {
		t.Errorf("%d requests failed while the service scaled up", n)
	}
}

// TestReplicatedServiceCostCap: a service loaded between a quarter of its
// target and the target keeps its two replicas by the load rule, but a
// million tokens costing more than max_usd_per_mtok takes it down to one.
func TestReplicatedServiceCostCap(t *testing.T) {
	prov := provOpts{gpus: 1, bronze: 0.5}
	_, renter := auctionCluster(t, []provOpts{prov, prov},
		nodetest.Options{Executors: modelExecutors(t, 20*time.Millisecond), Configure: func(i int, cfg *node.Config) {
			dockerOnly(i, cfg)
			replicaAttest(i, cfg)
		}})
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	spec := string(replicatedServiceJob("capped", 2)) + "min_replicas: 1\nmax_replicas: 2\nscale_in_flight: 4\nscale_window: 2s\nmax_usd_per_mtok: 0.000001\n"
	j, err := renter.Renter().Submit([]byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	if err := nodetest.WaitFor(ctx, "two healthy replicas", func() bool { return len(servingLeases(t, renter, j.ID)) == 2 }); err != nil {
		t.Fatal(err)
	}
	ep, err := renter.Renter().StartEndpoint(j.ID, "127.0.0.1:0", 8080)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 30 * time.Second}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 { // two per replica: under the target of 4, over a quarter of it
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, _, _ = streamCompletion(client, ep.Listen, 50)
			}
		})
	}
	defer func() { close(stop); wg.Wait() }()
	if err := nodetest.WaitFor(ctx, "scaled down by the cost cap", func() bool {
		cur, err := renter.Store().GetJob(j.ID)
		return err == nil && hasEvent(cur, "scaled", "max_usd_per_mtok: removing replica 1") && len(servingLeases(t, renter, j.ID)) == 1
	}); err != nil {
		cur, _ := renter.Store().GetJob(j.ID)
		for _, ev := range cur.Events {
			t.Logf("  %s: %s", ev.Kind, ev.Message)
		}
		t.Fatal(err)
	}
}
