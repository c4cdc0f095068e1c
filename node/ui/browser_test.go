package ui_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/idlegrid/idlegrid/node"
	"github.com/idlegrid/idlegrid/node/api/client"
	"github.com/idlegrid/idlegrid/node/devnet"
)

// chromiumPath finds a headless-capable Chromium. Without one the
// browser tests skip, unless IDLEGRID_REQUIRE_BROWSER=1 (CI sets it, so a
// broken install cannot pass silently).
func chromiumPath(tb testing.TB) string {
	tb.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("IDLEGRID_REQUIRE_BROWSER") == "1" {
		tb.Fatal("IDLEGRID_REQUIRE_BROWSER=1 but no chromium on PATH (apt-get install chromium)")
	}
	tb.Skip("chromium is not installed: skipping the browser tests (apt-get install chromium; IDLEGRID_REQUIRE_BROWSER=1 makes this a failure)")
	return ""
}

// newBrowser starts headless Chromium with a fresh profile and returns a
// tab's context; the browser stops at cleanup.
func newBrowser(tb testing.TB) context.Context {
	tb.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(tb)), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.UserDataDir(tb.TempDir()), chromedp.WindowSize(1280, 900))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	tb.Cleanup(func() { cancel(); cancelAlloc() })
	// The first action starts the browser; it must not run under a
	// timeout, which would end the browser with it.
	if err := chromedp.Do(ctx); err != nil {
		tb.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// startDevnet runs a bootstrap, the providers and a renter in process and
// returns the renter's API URL and token.
func startDevnet(tb testing.TB, providers int) (string, string) {
	tb.Helper()
	d := startDevnetNodes(tb, providers)
	return apiOf(tb, d.Nodes[len(d.Nodes)-1])
}

// apiOf is a devnet member's API URL and token.
func apiOf(tb testing.TB, m devnet.Member) (string, string) {
	tb.Helper()
	token, err := node.LoadToken(m.Home)
	if err != nil {
		tb.Fatal(err)
	}
	return m.Node.APIURL(), token
}

func startDevnetNodes(tb testing.TB, providers int) *devnet.Devnet {
	tb.Helper()
	d, err := devnet.Start(context.Background(), devnet.Options{Dir: tb.TempDir(), Providers: providers})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := d.Close(); err != nil {
			tb.Error(err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := d.WaitReady(ctx); err != nil {
		tb.Fatal(err)
	}
	return d
}

// screenshotDir is $IDLEGRID_UI_SCREENSHOTS, or a temporary directory:
// screenshots are artifacts, never committed.
func screenshotDir(tb testing.TB) string {
	if d := os.Getenv("IDLEGRID_UI_SCREENSHOTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			tb.Fatal(err)
		}
		return d
	}
	return tb.TempDir()
}

// must runs steps, each group under its own limit so a stuck step fails
// fast with its name.
func must(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

func location(t *testing.T, ctx context.Context) string {
	t.Helper()
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func bodyText(t *testing.T, ctx context.Context) string {
	return eval[string](t, ctx, `document.body.innerText`)
}

// TestDashboardInABrowser drives the dashboard of a devnet's renter in
// headless Chromium: refused without the token or from another origin,
// signed in, the market search, a demo job submitted from the form and
// followed live to completed, and every page at phone width.
func TestDashboardInABrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a devnet and a browser")
	}
	browser := newBrowser(t)
	const providers = 2
	d := startDevnetNodes(t, providers)
	base, token := apiOf(t, d.Nodes[len(d.Nodes)-1])
	ctx, cancel := context.WithTimeout(browser, 4*time.Minute)
	defer cancel()
	shots := screenshotDir(t)
	shot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(shots, name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// Without the token: every page sends the browser to the sign-in,
	// a wrong token is refused, and the API wants its bearer token.
	must(t, ctx, "open without a session", chromedp.Navigate(base+"/ui/market"))
	if loc := location(t, ctx); loc != base+"/ui/login" {
		t.Fatalf("without a session the market is at %s, want the sign-in", loc)
	}
	must(t, ctx, "wrong token", chromedp.SendKeys(chromedp.CSS("#token"), "not-the-token"), chromedp.Submit(chromedp.CSS("#token")),
		chromedp.WaitVisible(chromedp.CSS("p.error")))
	if txt := bodyText(t, ctx); !strings.Contains(txt, "Wrong token") {
		t.Errorf("wrong token page: %q", txt)
	}
	must(t, ctx, "API without a token", chromedp.Navigate(base+"/v1/status"))
	if txt := bodyText(t, ctx); !strings.Contains(txt, "missing bearer token") {
		t.Errorf("API without a token: %q", txt)
	}

	// Sign in.
	must(t, ctx, "sign in", chromedp.Navigate(base+"/ui/login"), chromedp.SendKeys(chromedp.CSS("#token"), token),
		chromedp.Submit(chromedp.CSS("#token")), chromedp.WaitVisible(chromedp.CSS(`nav[aria-label="Main"]`)))
	if loc := location(t, ctx); loc != base+"/ui/" {
		t.Fatalf("after sign-in at %s", loc)
	}
	if role := eval[string](t, ctx, `document.getElementById("role").textContent`); role != "renter" {
		t.Errorf("overview role %q", role)
	}
	// A renter's navigation: Jobs, no Provider; the provider page says
	// where it lives.
	checkNav(t, ctx, "Overview Market Jobs Trust")
	must(t, ctx, "the renter's provider page", chromedp.Navigate(base+"/ui/provider"), chromedp.WaitVisible(chromedp.CSS("#notice")))
	if title, txt := eval[string](t, ctx, `document.title`), bodyText(t, ctx); !strings.Contains(txt, "This node is a renter") || strings.Contains(title, "Bad Request") {
		t.Errorf("/ui/provider on a renter: %q\n%s", title, txt)
	}
	must(t, ctx, "overview", chromedp.Navigate(base+"/ui/"), chromedp.WaitVisible(chromedp.CSS("#role")))
	shot("overview")

	// A page on another origin posts to the dashboard with the browser's
	// cookie: the Origin check refuses it, and the session survives.
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, `<!doctype html><form id="f" method="post" action="%s/ui/logout"><input name="csrf" value="x"></form><script>document.getElementById("f").submit()</script>`, base)
	}))
	defer evil.Close()
	must(t, ctx, "forged origin", chromedp.Navigate(evil.URL),
		chromedp.Poll[chromedp.Void](fmt.Sprintf(`location.href.startsWith(%q)`, base), chromedp.WithPollingTimeout(30*time.Second)))
	if txt := bodyText(t, ctx); !strings.Contains(txt, "cross-origin request from") {
		t.Errorf("forged-origin post answered %q, want the Origin refusal", txt)
	}
	must(t, ctx, "overview after the forged post", chromedp.Navigate(base+"/ui/"))
	if loc := location(t, ctx); loc != base+"/ui/" {
		t.Fatalf("the forged post signed the browser out: at %s", loc)
	}

	// The market lists both providers once the renter has their records.
	deadline := time.Now().Add(90 * time.Second)
	for {
		must(t, ctx, "market", chromedp.Navigate(base+"/ui/market"))
		n := eval[int](t, ctx, `document.querySelectorAll("#offers tr.offer").length`)
		if n >= providers {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the market shows %d of %d providers", n, providers)
		}
		must(t, ctx, "wait", chromedp.Sleep(250*time.Millisecond))
	}
	must(t, ctx, "search", chromedp.SetValue(chromedp.CSS("#q"), "gpus>=1 price<=10"), chromedp.Submit(chromedp.CSS("#q")),
		chromedp.WaitVisible(chromedp.CSS("#offers")))
	if n := eval[int](t, ctx, `document.querySelectorAll("#offers tr.offer").length`); n != providers {
		t.Errorf("search found %d offers, want %d", n, providers)
	}
	must(t, ctx, "bad query", chromedp.SetValue(chromedp.CSS("#q"), "colour=blue"), chromedp.Submit(chromedp.CSS("#q")),
		chromedp.WaitVisible(chromedp.CSS("#q-err")))

	// Submit the demo job from the form and follow it live.
	must(t, ctx, "submit the demo job", chromedp.Navigate(base+"/ui/jobs"),
		chromedp.SetValue(chromedp.CSS("#f-name"), "browser-demo"),
		chromedp.SetValue(chromedp.CSS("#f-module"), devnet.DemoModule),
		chromedp.SetValue(chromedp.CSS("#f-command"), "160"),
		chromedp.SetValue(chromedp.CSS("#f-window"), "3s"),
		chromedp.Click(chromedp.CSS(`#submit button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS("#state")))
	if loc := location(t, ctx); !strings.HasPrefix(loc, base+"/ui/jobs/") {
		t.Fatalf("after submit at %s: %s", loc, bodyText(t, ctx))
	}
	// data-state is the state the server rendered; the script leaves it.
	initial := eval[string](t, ctx, `document.getElementById("job").dataset.state`)
	t.Logf("the job page opened in state %q", initial)
	must(t, ctx, "job completes", chromedp.Poll[chromedp.Void](`document.getElementById("state").textContent === "completed"`,
		chromedp.WithPollingTimeout(2*time.Minute)))
	must(t, ctx, "job log", chromedp.Poll[chromedp.Void](`document.getElementById("log").textContent.includes("done: n=160")`,
		chromedp.WithPollingTimeout(30*time.Second)))
	// The page got there by itself: its events came over the stream
	// (replayed, if the job was done before the page opened).
	if live := eval[string](t, ctx, `document.getElementById("job").dataset.live || "0"`); live == "0" {
		t.Error("the job page received no live events")
	}
	if hidden := eval[bool](t, ctx, `document.getElementById("result").hidden`); hidden {
		t.Error("no result link on the completed job")
	}
	must(t, ctx, "leases refreshed at the end", chromedp.Poll[chromedp.Void](`document.querySelectorAll("#job-leases tbody a").length >= 1`,
		chromedp.WithPollingTimeout(30*time.Second)))
	if hidden := eval[bool](t, ctx, `document.getElementById("cancel").hidden`); !hidden {
		t.Error("the cancel button is still offered on a completed job")
	}
	status, err := chromedp.Run(ctx, chromedp.Evaluate[int](`fetch(document.getElementById("result").href).then(r => r.status)`, chromedp.EvalAwaitPromise))
	if err != nil || status != http.StatusOK {
		t.Errorf("result download: %d, %v", status, err)
	}
	shot("job")

	// The price index charts the award: a row named by model and tier on
	// a USD axis.
	deadline = time.Now().Add(60 * time.Second)
	for {
		must(t, ctx, "market with prices", chromedp.Navigate(base+"/ui/market"), chromedp.WaitVisible(chromedp.CSS("h1")))
		if eval[int](t, ctx, `document.querySelectorAll("figure.prices .row-label").length`) >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no price row 60 s after the award:\n%s", bodyText(t, ctx))
		}
		must(t, ctx, "wait", chromedp.Sleep(500*time.Millisecond))
	}
	checkAxes(t, ctx, "figure.prices", "$", "USD per GPU-hour")
	if label := eval[string](t, ctx, `document.querySelector("figure.prices .row-label").textContent`); !strings.Contains(label, "silver") {
		t.Errorf("price row %q names no model and tier", label)
	}
	shot("market")

	// The winning provider's own dashboard, in the same browser: its
	// GPUs and the lease it served. Signing in there leaves the renter's
	// session alone (cookies are named per port).
	winner := winningProvider(t, d, base, token)
	provBase, provToken := apiOf(t, winner)
	must(t, ctx, "provider sign-in", chromedp.Navigate(provBase+"/ui/login"), chromedp.SendKeys(chromedp.CSS("#token"), provToken),
		chromedp.Submit(chromedp.CSS("#token")), chromedp.WaitVisible(chromedp.CSS(`nav[aria-label="Main"]`)))
	// A provider's navigation: Provider, no Jobs; the jobs page says where
	// jobs live.
	checkNav(t, ctx, "Overview Market Provider Trust")
	must(t, ctx, "the provider's jobs page", chromedp.Navigate(provBase+"/ui/jobs"), chromedp.WaitVisible(chromedp.CSS("#notice")))
	if title, txt := eval[string](t, ctx, `document.title`), bodyText(t, ctx); !strings.Contains(txt, "This node is a provider") || strings.Contains(title, "Bad Request") {
		t.Errorf("/ui/jobs on a provider: %q\n%s", title, txt)
	}
	must(t, ctx, "provider page", chromedp.Navigate(provBase+"/ui/provider"), chromedp.WaitVisible(chromedp.CSS("#gpus")))
	if n := eval[int](t, ctx, `document.querySelectorAll("#gpus tbody tr").length`); n < 1 {
		t.Errorf("provider page lists %d GPUs", n)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("a[href$='/attestations']").length`); n < 1 {
		t.Errorf("provider page lists no lease with its attestation export")
	}
	// Each GPU's chart gets data points as the sampler runs (10 s buckets):
	// reload until a chart draws a line of at least two.
	gpuPoints := `Math.max(0, ...Array.from(document.querySelectorAll("figure.gpu")).map(f => +f.dataset.points))`
	deadline = time.Now().Add(90 * time.Second)
	for eval[int](t, ctx, gpuPoints) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the provider's GPU charts have %d points after 90 s", eval[int](t, ctx, gpuPoints))
		}
		must(t, ctx, "provider page reload", chromedp.Sleep(time.Second), chromedp.Navigate(provBase+"/ui/provider"), chromedp.WaitVisible(chromedp.CSS("#gpus")))
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("figure.gpu").length`); n != 4 {
		t.Errorf("%d GPU charts, want utilization, power, temperature and memory", n)
	}
	// Absolute scales with their units, time on the x axis, GPUs named.
	checkAxes(t, ctx, "figure.gpu:nth-of-type(1)", "%", "time (UTC)")
	checkAxes(t, ctx, "figure.gpu:nth-of-type(2)", " W", "time (UTC)")
	if legend := eval[string](t, ctx, `document.querySelector("figure.gpu .legend").textContent`); !strings.Contains(legend, "GPU 0 · ") {
		t.Errorf("GPU legend %q", legend)
	}
	shot("provider")
	must(t, ctx, "renter after the provider sign-in", chromedp.Navigate(base+"/ui/jobs"))
	if loc := location(t, ctx); loc != base+"/ui/jobs" {
		t.Errorf("signing in to the provider signed the renter out: at %s", loc)
	}

	// Phone width: no page scrolls sideways, and every table fits its
	// box (the columns that matter stay, the rest hide).
	must(t, ctx, "phone viewport", chromedp.EmulateViewport(375, 740, chromedp.EmulateMobile))
	for _, p := range []struct{ base, path, shot string }{
		{base, "", "phone-overview"}, {base, "market", "phone-market"}, {base, "jobs", "phone-jobs"},
		{base, "trust", "phone-trust"}, {provBase, "provider", "phone-provider"},
	} {
		must(t, ctx, "phone "+p.shot, chromedp.Navigate(p.base+"/ui/"+p.path), chromedp.WaitVisible(chromedp.CSS("h1")))
		sw := eval[int](t, ctx, `document.documentElement.scrollWidth`)
		vw := eval[int](t, ctx, `window.innerWidth`)
		if sw > vw {
			t.Errorf("/ui/%s at phone width: %d px wide in a %d px viewport", p.path, sw, vw)
		}
		if over := eval[[]string](t, ctx, `Array.from(document.querySelectorAll(".scroll")).filter(d => d.scrollWidth > d.clientWidth + 1).map(d => d.querySelector("table").id || d.innerText.slice(0, 40))`); len(over) > 0 {
			t.Errorf("/ui/%s at phone width: tables wider than the screen: %q", p.path, over)
		}
		shot(p.shot)
	}
	t.Logf("screenshots in %s", shots)
}

// checkNav checks the navigation's links, in order.
func checkNav(t *testing.T, ctx context.Context, want string) {
	t.Helper()
	if got := eval[string](t, ctx, `Array.from(document.querySelectorAll("nav a")).map(a => a.textContent).join(" ")`); got != want {
		t.Errorf("navigation %q, want %q", got, want)
	}
}

// checkAxes checks a chart's axes: three or more value ticks carrying
// unit, labelled x ticks, and the x axis' title.
func checkAxes(t *testing.T, ctx context.Context, figure, unit, xTitle string) {
	t.Helper()
	texts := func(axis string) []string {
		return eval[[]string](t, ctx, fmt.Sprintf(`Array.from(document.querySelectorAll(%q)).map(e => e.textContent)`,
			figure+" ."+axis+" text:not(.axis-title)"))
	}
	// The price index has its values on the x axis and no y axis; the
	// time charts have values up the y axis and times along x. How many
	// ticks a nice scale draws depends on the data (3 to 5 from zero).
	yTicks, xTicks := texts("y-axis"), texts("x-axis")
	withUnit := 0
	for _, tk := range append(append([]string(nil), yTicks...), xTicks...) {
		if strings.Contains(tk, unit) {
			withUnit++
		}
	}
	labelledX := 0
	for _, tk := range xTicks {
		if strings.TrimSpace(tk) != "" {
			labelledX++
		}
	}
	if withUnit < 3 || labelledX < 1 {
		t.Errorf("%s: y ticks %q, x ticks %q: want at least 3 in %q and labelled x ticks", figure, yTicks, xTicks, unit)
	}
	if got := eval[string](t, ctx, fmt.Sprintf(`(document.querySelector(%q) || {}).textContent || ""`, figure+" .x-axis .axis-title")); got != xTitle {
		t.Errorf("%s: x axis titled %q, want %q", figure, got, xTitle)
	}
}

// winningProvider is the devnet member that holds the lease of the
// renter's only job.
func winningProvider(t *testing.T, d *devnet.Devnet, base, token string) devnet.Member {
	t.Helper()
	jobs, err := client.New(base, token).Jobs(context.Background())
	if err != nil || len(jobs) != 1 || len(jobs[0].Leases) == 0 {
		t.Fatalf("renter's jobs: %+v, %v", jobs, err)
	}
	for _, m := range d.Nodes {
		if m.Node.ID().String() == jobs[0].Leases[0].Provider {
			return m
		}
	}
	t.Fatalf("no devnet member is the lease's provider %s", jobs[0].Leases[0].Provider)
	return devnet.Member{}
}
