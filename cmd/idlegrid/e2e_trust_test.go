package main_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/node/api"
	apiclient "github.com/idlegrid/idlegrid/node/api/client"
	"github.com/idlegrid/idlegrid/node/executor/wasm/demo"
)

// trustNet is 1 bootstrap, 1 provider (a simulated T4 offering WASM),
// optionally a spare provider like it, and 1 renter holding the demo
// module, all attesting and paying in short periods.
type trustNet struct {
	bin                    string
	boot, provider, renter *proc
	spare                  *proc // nil unless asked for
	all                    []*proc
}

// Short attestation periods: a telemetry window and a voucher every
// 500 ms. The grace is long enough for a killed renter to come back before
// the provider stops its unpaid work.
var trustAttest = []string{
	"--set", "attest.sample=100ms",
	"--set", "attest.window=500ms",
	"--set", "attest.voucher_interval=500ms",
	"--set", "attest.voucher_grace=10s",
}

func startTrustNet(t *testing.T, withSpare bool) *trustNet {
	t.Helper()
	return startTrustNetOn(t, withSpare, "")
}

// startTrustNetOn is startTrustNet with the provider's home under
// providerRoot (a small file system in a test), and its extra args.
func startTrustNetOn(t *testing.T, withSpare bool, providerRoot string, providerArgs ...string) *trustNet {
	t.Helper()
	d := &trustNet{bin: buildBinary(t)}
	root := t.TempDir()
	add := func(name, role string) *proc {
		p := initProc(t, d.bin, root, name, role)
		d.all = append(d.all, p)
		return p
	}
	d.boot = add("bootstrap", "bootstrap")
	if providerRoot != "" {
		d.provider = initProc(t, d.bin, providerRoot, "provider", "provider")
		d.all = append(d.all, d.provider)
	} else {
		d.provider = add("provider", "provider")
	}
	if withSpare {
		d.spare = add("spare", "provider")
	}
	d.renter = add("renter", "renter")
	t.Cleanup(func() {
		if t.Failed() {
			for _, p := range d.all {
				if p.log != nil {
					t.Logf("--- log of %s (badger lines left out) ---\n%s", p.name, tail(quietLog(p.log.String()), 12000))
				}
			}
		}
	})
	bootAddr := fmt.Sprintf("/ip4/127.0.0.1/tcp/%d/p2p/%s", d.boot.p2pPort, d.boot.peerID)
	for _, p := range d.all {
		p.args = append([]string{
			"--listen", fmt.Sprintf("/ip4/127.0.0.1/tcp/%d,/ip4/127.0.0.1/udp/%d/quic-v1", p.p2pPort, p.p2pPort),
			"--api-listen", fmt.Sprintf("127.0.0.1:%d", p.apiPort),
			"--set", "p2p.nat=false",
			"--set", "api.debug=true",
			"--set", "p2p.reconnect_min=200ms",
			"--set", "p2p.reconnect_max=2s",
			"--set", "p2p.gossip_heartbeat=200ms",
			"--set", "p2p.conn_grace=0s",
			"--set", "market.refresh=2s",
			"--log-level", "debug",
		}, trustAttest...)
		if p == d.provider || p == d.spare {
			p.args = append(p.args,
				"--set", "gpu.backend=sim",
				"--set", "gpu.sim.profiles=t4",
				"--set", "provider.runtimes=wasm",
				"--set", "provider.region=de",
			)
		}
		if p == d.provider {
			p.args = append(p.args, providerArgs...)
		}
		if p == d.spare {
			// Dearer, so that the first award goes to d.provider.
			p.args = append(p.args, "--set", "provider.floor_usd.silver=3.5")
		}
		if p != d.boot {
			p.args = append(p.args, "--bootstrap", bootAddr)
		}
		token, err := os.ReadFile(filepath.Join(p.home, "api.token"))
		if err != nil {
			t.Fatal(err)
		}
		p.client = apiclient.New(fmt.Sprintf("http://127.0.0.1:%d", p.apiPort), strings.TrimSpace(string(token)))
		p.start(t, d.bin)
		t.Cleanup(p.stop)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	waitAllConnected(t, ctx, d.all)

	// The renter serves the demo module to its providers.
	mod := filepath.Join(t.TempDir(), "demo.wasm")
	if err := os.WriteFile(mod, demo.Module(), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := run(t, d.bin, "artifact", "add", mod, "--home", d.renter.home); err != nil || !strings.Contains(out, demo.CID) {
		t.Fatalf("artifact add: %v\n%s", err, out)
	}
	d.waitOffer(t, ctx)
	return d
}

// waitOffer waits until the renter sees the providers' WASM offers with
// their GPU free.
func (d *trustNet) waitOffer(t *testing.T, ctx context.Context) {
	t.Helper()
	provs := []*proc{d.provider}
	if d.spare != nil {
		provs = append(provs, d.spare)
	}
	waitFor(t, ctx, "the renter to see the providers' free WASM offers", d.all, func() (bool, string) {
		res, err := d.renter.client.Search(ctx, "", apiclient.SearchOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, p := range provs {
			i := slices.IndexFunc(res.Offers, func(o api.Offer) bool { return o.PeerID == p.peerID })
			if i < 0 {
				return false, "no offer from " + p.name
			}
			if o := res.Offers[i]; !slices.Contains(o.Runtimes, "wasm") || o.FreeGPUs < 1 {
				return false, fmt.Sprintf("%s offers runtimes %v with %d free GPUs", p.name, o.Runtimes, o.FreeGPUs)
			}
		}
		return true, ""
	})
}

// submit posts the demo module with matrix size n and returns the job ID.
func (d *trustNet) submit(t *testing.T, name string, n int) string {
	t.Helper()
	return d.submitWindow(t, name, n, "2s")
}

// submitWindow is submit with the auction's bid window.
func (d *trustNet) submitWindow(t *testing.T, name string, n int, window string) string {
	t.Helper()
	return d.submitSpec(t, name, n, window, "")
}

// submitSpec is submitWindow with more spec lines (extra, YAML).
func (d *trustNet) submitSpec(t *testing.T, name string, n int, window, extra string) string {
	t.Helper()
	spec := fmt.Sprintf(`name: %s
module: %s
command: ["%d"]
gpus: 1
gpu: [t4]
tier: silver
max_price: 5
duration: 5m
bid_window: %s
`, name, demo.CID, n, window) + extra
	file := filepath.Join(t.TempDir(), "job.yaml")
	if err := os.WriteFile(file, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	var job api.Job
	runJSON(t, d.bin, &job, "job", "submit", "-f", file, "--home", d.renter.home, "--detach", "--json")
	if job.ID == "" {
		t.Fatal("job submit returned no job ID")
	}
	t.Logf("submitted %s: job %s (n=%d)", name, job.ID, n)
	return job.ID
}

// lease is p's view of the job's lease through the API (cheaper to poll
// than the CLI).
func (d *trustNet) lease(ctx context.Context, p *proc, job string) (api.Lease, error) {
	leases, err := p.client.Leases(ctx)
	if err != nil {
		return api.Lease{}, err
	}
	ids := d.jobLeases(ctx, job)
	for _, l := range leases {
		if l.JobID == job || ids[l.ID] {
			return l, nil
		}
	}
	return api.Lease{}, fmt.Errorf("%s has no lease of job %s (%s)", p.name, job, d.renterJob(ctx, job))
}

// renterJob says where the renter's job stands, for failure messages.
func (d *trustNet) renterJob(ctx context.Context, id string) string {
	j, err := d.renter.client.Job(ctx, id)
	if err != nil {
		return "renter: " + err.Error()
	}
	s := fmt.Sprintf("renter's job %s: %s", j.State, j.Reason)
	if n := len(j.Events); n > 0 {
		s += fmt.Sprintf("; last event %s: %s", j.Events[n-1].Kind, j.Events[n-1].Message)
	}
	return s
}

// jobLeases are the IDs of the renter's leases of a job: a provider's
// copy of a lease knows the spec, not the renter's job ID (each submit
// is a new job), and the lease ID is the same on both sides.
// While the renter is down (killed in a test) the last answer is used.
func (d *trustNet) jobLeases(ctx context.Context, job string) map[string]bool {
	ids := map[string]bool{}
	leases, err := d.renter.client.Leases(ctx)
	if err != nil {
		jobLeaseCache.Lock()
		defer jobLeaseCache.Unlock()
		for id := range jobLeaseCache.ids[job] {
			ids[id] = true
		}
		return ids
	}
	for _, l := range leases {
		if l.JobID == job {
			ids[l.ID] = true
		}
	}
	jobLeaseCache.Lock()
	if jobLeaseCache.ids == nil {
		jobLeaseCache.ids = map[string]map[string]bool{}
	}
	if len(ids) > 0 {
		jobLeaseCache.ids[job] = ids
	}
	jobLeaseCache.Unlock()
	return ids
}

// jobLeaseCache remembers each job's lease IDs from the renter.
var jobLeaseCache struct {
	sync.Mutex
	ids map[string]map[string]bool
}

// leaseCLI is p's view of the job's lease from `idlegrid leases --json`.
func (d *trustNet) leaseCLI(t *testing.T, p *proc, job string) api.Lease {
	t.Helper()
	var leases []api.Lease
	runJSON(t, d.bin, &leases, "leases", "--json", "--home", p.home)
	ids := d.jobLeases(t.Context(), job)
	for _, l := range leases {
		if l.JobID == job || ids[l.ID] {
			return l
		}
	}
	t.Fatalf("%s has no lease of job %s: %+v", p.name, job, leases)
	return api.Lease{}
}

func (d *trustNet) spend(t *testing.T) float64 {
	t.Helper()
	var s api.Spend
	runJSON(t, d.bin, &s, "spend", "--json", "--home", d.renter.home)
	return s.TotalUSD
}

func (d *trustNet) earnings(t *testing.T) float64 {
	t.Helper()
	var e api.Earnings
	runJSON(t, d.bin, &e, "earnings", "--json", "--home", d.provider.home)
	return e.TotalUSD
}

// waitPaid waits until p's lease of job is paid beyond more than min.
func (d *trustNet) waitPaid(t *testing.T, ctx context.Context, p *proc, job string, min float64, what string) api.Lease {
	t.Helper()
	var l api.Lease
	waitFor(t, ctx, what, d.all, func() (bool, string) {
		var err error
		if l, err = d.lease(ctx, p, job); err != nil {
			return false, err.Error()
		}
		if l.PaidUSD <= min && l.State != "running" {
			t.Fatalf("%s: %s's lease %s (%s), paid $%.6f", what, p.name, l.State, l.Reason, l.PaidUSD)
		}
		return l.PaidUSD > min, fmt.Sprintf("%s's lease %s (%s), paid $%.6f until %s", p.name, l.State, l.Reason, l.PaidUSD, l.PaidUntil.Format(time.StampMilli))
	})
	return l
}

// waitJob waits until the renter's job ends and returns it.
func (d *trustNet) waitJob(t *testing.T, ctx context.Context, id string) api.Job {
	t.Helper()
	var j api.Job
	waitFor(t, ctx, "job "+id+" to end", d.all, func() (bool, string) {
		var err error
		if j, err = d.renter.client.Job(ctx, id); err != nil {
			return false, err.Error()
		}
		return j.Terminal(), fmt.Sprintf("job %s: %s", j.State, j.Reason)
	})
	var out api.Job
	runJSON(t, d.bin, &out, "job", "status", id, "--json", "--home", d.renter.home)
	return out
}

// waitReceipts waits until both sides hold the same receipt of the job's
// lease and agree on what was paid, and returns both views.
func (d *trustNet) waitReceipts(t *testing.T, ctx context.Context, job string) (rl, pl api.Lease) {
	t.Helper()
	waitFor(t, ctx, "both sides to hold the same receipt and agree on the pay", d.all, func() (bool, string) {
		var err error
		if rl, err = d.lease(ctx, d.renter, job); err != nil {
			return false, err.Error()
		}
		if pl, err = d.lease(ctx, d.provider, job); err != nil {
			return false, err.Error()
		}
		state := fmt.Sprintf("renter: %s paid $%.6f receipt %q; provider: %s paid $%.6f receipt %q",
			rl.State, rl.PaidUSD, rl.ReceiptCID, pl.State, pl.PaidUSD, pl.ReceiptCID)
		if rl.PaidUSD < pl.PaidUSD {
			t.Fatalf("the provider holds more than the renter signed: %s", state)
		}
		return rl.ReceiptCID != "" && rl.ReceiptCID == pl.ReceiptCID && rl.PaidUSD == pl.PaidUSD, state
	})
	return rl, pl
}

// TestCrashRestartKeepsVouchersAndReceipts runs the real binary with
// 500 ms telemetry windows and vouchers and kills -9 each side in turn:
//
//   - the renter, mid-job: after its restart it has lost neither its signed
//     vouchers nor its spend, pays on (the provider's paid amount grows),
//     the job completes and both sides end with the same receipt and paid
//     amount;
//   - the provider, after that job: the receipt survives on both sides,
//     earnings still count the lease, and the renter's attestation export
//     of the lease passes every check of `attest verify`;
//   - the provider, mid-job: the restarted provider fails the WASM lease,
//     still holds every voucher it acknowledged before the kill, and the
//     renter's job fails.
func TestCrashRestartKeepsVouchersAndReceipts(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test")
	}
	began := time.Now()
	d := startTrustNet(t, false)
	t.Logf("network up in %v", time.Since(began).Round(time.Millisecond))
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()

	// A job long enough for many vouchers (n=1024: ~40 s of work).
	id := d.submit(t, "trust-renter-kill", 1024)
	var lease string

	t.Run("renter kill -9 mid-job", func(t *testing.T) {
		// Several vouchers: paid for at least 2 s of work.
		waitFor(t, ctx, "the provider to accept a few vouchers", d.all, func() (bool, string) {
			l, err := d.lease(ctx, d.provider, id)
			if err != nil {
				return false, err.Error()
			}
			lease = l.ID
			ok := l.State == "running" && !l.StartedAt.IsZero() && l.PaidUntil.Sub(l.StartedAt) >= 2*time.Second
			return ok, fmt.Sprintf("provider's lease %s, paid $%.6f until %s, started %s", l.State, l.PaidUSD, l.PaidUntil.Format(time.StampMilli), l.StartedAt.Format(time.StampMilli))
		})
		before := d.leaseCLI(t, d.renter, id)
		spendBefore := d.spend(t)
		if before.PaidUSD <= 0 || spendBefore < before.PaidUSD {
			t.Fatalf("before the kill the renter's lease is paid $%.6f, spend $%.6f", before.PaidUSD, spendBefore)
		}
		d.renter.kill9(t)
		// Read after the kill: nothing more can reach the provider.
		provBefore := d.leaseCLI(t, d.provider, id)
		t.Logf("renter killed: renter paid $%.6f (spend $%.6f), provider paid $%.6f", before.PaidUSD, spendBefore, provBefore.PaidUSD)
		d.renter.start(t, d.bin)
		waitFor(t, ctx, "the restarted renter to answer", d.all, func() (bool, string) {
			_, err := d.lease(ctx, d.renter, id)
			return err == nil, fmt.Sprint(err)
		})

		after := d.leaseCLI(t, d.renter, id)
		if after.PaidUSD < before.PaidUSD || after.PaidUntil.Before(before.PaidUntil) {
			t.Errorf("after the restart the renter's lease is paid $%.6f until %s, before $%.6f until %s",
				after.PaidUSD, after.PaidUntil.Format(time.StampMilli), before.PaidUSD, before.PaidUntil.Format(time.StampMilli))
		}
		// The renter signed at least what the provider holds.
		if after.PaidUSD < provBefore.PaidUSD {
			t.Errorf("after the restart the renter's lease is paid $%.6f, less than the provider holds ($%.6f)", after.PaidUSD, provBefore.PaidUSD)
		}
		if s := d.spend(t); s < spendBefore {
			t.Errorf("after the restart spend is $%.6f, before $%.6f", s, spendBefore)
		}

		// Payments resume: the provider is paid beyond what it held.
		resumed := d.waitPaid(t, ctx, d.provider, id, provBefore.PaidUSD, "the provider to be paid again after the renter's restart")
		t.Logf("payments resumed: provider paid $%.6f (was $%.6f)", resumed.PaidUSD, provBefore.PaidUSD)
		// And keep growing while the lease runs (not a single late voucher).
		waitFor(t, ctx, "payments to keep coming", d.all, func() (bool, string) {
			l, err := d.lease(ctx, d.provider, id)
			if err != nil {
				return false, err.Error()
			}
			return l.State != "running" || l.PaidUntil.Sub(resumed.PaidUntil) >= 2*time.Second,
				fmt.Sprintf("provider's lease %s, paid until %s", l.State, l.PaidUntil.Format(time.StampMilli))
		})

		j := d.waitJob(t, ctx, id)
		if j.State != "completed" || len(j.Leases) != 1 || j.Leases[0].State != "completed" {
			t.Fatalf("job %s (%s), leases %+v", j.State, j.Reason, j.Leases)
		}
		rl, pl := d.waitReceipts(t, ctx, id)
		if rl.PaidUSD < after.PaidUSD || pl.PaidUSD < resumed.PaidUSD {
			t.Errorf("final pay went down: renter $%.6f (was $%.6f), provider $%.6f (was $%.6f)", rl.PaidUSD, after.PaidUSD, pl.PaidUSD, resumed.PaidUSD)
		}
		// The last voucher covers the work up to its end (within a window).
		if pl.PaidUntil.Before(pl.FinishedAt.Add(-time.Second)) {
			t.Errorf("the final voucher covers until %s, the work finished at %s", pl.PaidUntil.Format(time.StampMilli), pl.FinishedAt.Format(time.StampMilli))
		}
		if s := d.spend(t); s != rl.PaidUSD {
			t.Errorf("spend $%.6f, the lease's final voucher $%.6f", s, rl.PaidUSD)
		}
		if e := d.earnings(t); e != pl.PaidUSD {
			t.Errorf("earnings $%.6f, the lease's final voucher $%.6f", e, pl.PaidUSD)
		}
		t.Logf("job completed; both sides paid $%.6f, receipt %s", rl.PaidUSD, rl.ReceiptCID)
	})
	if t.Failed() {
		return
	}

	t.Run("provider kill -9 after the receipt", func(t *testing.T) {
		rl0, pl0 := d.leaseCLI(t, d.renter, id), d.leaseCLI(t, d.provider, id)
		earned := d.earnings(t)
		d.provider.kill9(t)
		d.provider.start(t, d.bin)
		waitFor(t, ctx, "the restarted provider to answer", d.all, func() (bool, string) {
			_, err := d.lease(ctx, d.provider, id)
			return err == nil, fmt.Sprint(err)
		})
		rl, pl := d.leaseCLI(t, d.renter, id), d.leaseCLI(t, d.provider, id)
		if pl.ReceiptCID != pl0.ReceiptCID || rl.ReceiptCID != rl0.ReceiptCID || pl.ReceiptCID != rl.ReceiptCID || pl.ReceiptCID == "" {
			t.Errorf("receipts after the provider's restart: provider %q (was %q), renter %q (was %q)", pl.ReceiptCID, pl0.ReceiptCID, rl.ReceiptCID, rl0.ReceiptCID)
		}
		if pl.PaidUSD != pl0.PaidUSD || pl.State != "completed" {
			t.Errorf("provider's lease after its restart: %s paid $%.6f, was %s paid $%.6f", pl.State, pl.PaidUSD, pl0.State, pl0.PaidUSD)
		}
		if e := d.earnings(t); e != earned || e <= 0 {
			t.Errorf("earnings after the restart $%.6f, before $%.6f", e, earned)
		}

		// The renter exports the lease's attestations from the restarted
		// provider and every check passes offline.
		waitAllConnected(t, ctx, d.all)
		file := filepath.Join(t.TempDir(), "lease.json")
		waitFor(t, ctx, "attest export from the renter", d.all, func() (bool, string) {
			out, err := run(t, d.bin, "attest", "export", lease, "-o", file, "--home", d.renter.home)
			return err == nil, fmt.Sprintf("%v: %s", err, out)
		})
		var findings []struct {
			Check   string `json:"check"`
			OK      bool   `json:"ok"`
			Message string `json:"message"`
		}
		runJSON(t, d.bin, &findings, "attest", "verify", file, "--json")
		if len(findings) == 0 {
			t.Fatal("attest verify reported no checks")
		}
		var checks []string
		for _, f := range findings {
			if !f.OK {
				t.Errorf("attest verify: %s failed: %s", f.Check, f.Message)
			}
			if !slices.Contains(checks, f.Check) {
				checks = append(checks, f.Check)
			}
		}
		if out, err := run(t, d.bin, "attest", "verify", file); err != nil {
			t.Errorf("attest verify: %v\n%s", err, out)
		}
		t.Logf("attest verify passed %d findings over checks %v", len(findings), checks)
	})
	if t.Failed() {
		return
	}

	t.Run("provider kill -9 mid-job", func(t *testing.T) {
		d.waitOffer(t, ctx)
		id := d.submit(t, "trust-provider-kill", 1024)
		var pl0 api.Lease
		waitFor(t, ctx, "the provider to accept a few vouchers", d.all, func() (bool, string) {
			l, err := d.lease(ctx, d.provider, id)
			if err != nil {
				return false, err.Error()
			}
			ok := l.State == "running" && !l.StartedAt.IsZero() && l.PaidUntil.Sub(l.StartedAt) >= 2*time.Second
			return ok, fmt.Sprintf("provider's lease %s, paid $%.6f until %s", l.State, l.PaidUSD, l.PaidUntil.Format(time.StampMilli))
		})
		pl0 = d.leaseCLI(t, d.provider, id)
		d.provider.kill9(t)
		t.Logf("provider killed with $%.6f acknowledged until %s", pl0.PaidUSD, pl0.PaidUntil.Format(time.StampMilli))
		d.provider.start(t, d.bin)

		j := d.waitJob(t, ctx, id)
		if j.State != "failed" {
			t.Fatalf("job %s (%s), want failed", j.State, j.Reason)
		}
		pl := d.leaseCLI(t, d.provider, id)
		if pl.State != "failed" || !strings.Contains(pl.Reason, "restart") {
			t.Errorf("provider's lease after its restart: %s (%s), want failed naming the restart", pl.State, pl.Reason)
		}
		if pl.PaidUSD < pl0.PaidUSD || pl.PaidUntil.Before(pl0.PaidUntil) {
			t.Errorf("provider's lease after its restart paid $%.6f until %s, before the kill $%.6f until %s",
				pl.PaidUSD, pl.PaidUntil.Format(time.StampMilli), pl0.PaidUSD, pl0.PaidUntil.Format(time.StampMilli))
		}
		rl := d.leaseCLI(t, d.renter, id)
		if rl.State != "failed" || rl.PaidUSD < pl.PaidUSD {
			t.Errorf("renter's lease %s paid $%.6f, provider's %s paid $%.6f", rl.State, rl.PaidUSD, pl.State, pl.PaidUSD)
		}
		t.Logf("job failed: %s; provider kept $%.6f (had $%.6f before the kill)", j.Reason, pl.PaidUSD, pl0.PaidUSD)
	})
	t.Logf("total %v", time.Since(began).Round(time.Millisecond))
}

// quietLog leaves the storage engine's debug lines out of a daemon log.
func quietLog(s string) string {
	var b strings.Builder
	for line := range strings.Lines(s) {
		if !strings.Contains(line, "component=badger") {
			b.WriteString(line)
		}
	}
	return b.String()
}
