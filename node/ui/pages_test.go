package ui_test

import (
	"bytes"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/node/api"
)

func TestEveryPageRenders(t *testing.T) {
	renter, provider := newHarness(t), newHarnessAs(t, "provider")
	rc, _ := renter.login(t)
	pc, _ := provider.login(t)
	for _, tc := range []struct {
		h    *harness
		c    *http.Client
		path string
		want []string
	}{
		{renter, rc, "/ui/", []string{"<h1>Overview</h1>", "renter", "12D3KooWSelf", "ready", "idlegrid/rfq/1", "-12.5", "gossip_reject", "1h2m5s", "v0.test"}},
		{renter, rc, "/ui/market", []string{"<h1>Market</h1>", `class="offer"`, "12D3KooW", "$2.49", "h100-sxm-80gb", "<svg", "median $2.50",
			"h100-sxm-80gb silver", "rtx-4090 bronze", "USD per GPU-hour", `class="x-axis"`}},
		{renter, rc, "/ui/market?q=gpu%3Dh100&window=1h", []string{`value="gpu=h100"`, `class="offer"`, "last hour"}},
		{renter, rc, "/ui/market?q=nogpu", []string{`class="offer"`, `<td class="name">none</td>`}},
		{renter, rc, "/ui/jobs", []string{"<h1>Jobs</h1>", "fake-demo", `name="csrf"`, `<label for="f-module">`, "$3.25", "<svg", `class="y-axis"`, "Nov 30"}},
		{renter, rc, "/ui/jobs/" + fakeJob, []string{`id="state"`, "running", "RFQ published", "awarded", `action="/ui/jobs/` + fakeJob + `/cancel"`, "/ui/jobs/" + fakeJob + "/result"}},
		{renter, rc, "/ui/jobs/" + fakeService, []string{`id="job-service"`, "127.0.0.1:8000", `<b id="service-replicas">2</b> replicas`,
			"p95 TTFT", "$/1M tokens", "241.3 ms", "12.7 ms", "2 (replaced)", `class="total"`, "$10.0000"}},
		{renter, rc, "/ui/trust", []string{"<h1>Trust</h1>", "trusted", "0.87", "/ui/leases/" + fakeLease + "/attestations"}},
		{provider, pc, "/ui/provider", []string{"<h1>Provider</h1>", "NVIDIA H100", "80 GiB", "$7.50", "40%", "50% filled (2.0 GPU-hours of 4.0 GPU-hours leased)", `class="y-axis"`, "100%"}},
		{provider, pc, "/ui/market", []string{"<h1>Market</h1>", `class="offer"`}},
	} {
		t.Run(tc.h.fake.role+tc.path, func(t *testing.T) {
			status, body := get(t, tc.c, tc.h.url+tc.path)
			if status != http.StatusOK {
				t.Fatalf("status %d: %s", status, body)
			}
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("page lacks %q", w)
				}
			}
		})
	}
}

// TestNavigationByRole: a renter's pages link to Jobs and not to
// Provider, a provider's the opposite, and the page a role lacks says
// where it lives instead of showing an error.
func TestNavigationByRole(t *testing.T) {
	for _, tc := range []struct {
		role, has, lacks, lackPath, notice string
	}{
		{"renter", `href="/ui/jobs"`, `href="/ui/provider"`, "/ui/provider", "This node is a renter: it offers no GPUs"},
		{"provider", `href="/ui/provider"`, `href="/ui/jobs"`, "/ui/jobs", "This node is a provider: jobs are posted and followed on a renter node"},
		{"bootstrap", `href="/ui/trust"`, `href="/ui/jobs"`, "/ui/jobs/" + fakeJob, "This node is a bootstrap"},
	} {
		t.Run(tc.role, func(t *testing.T) {
			h := newHarnessAs(t, tc.role)
			c, _ := h.login(t)
			_, body := get(t, c, h.url+"/ui/")
			if !strings.Contains(body, tc.has) || strings.Contains(body, tc.lacks) {
				t.Errorf("navigation of a %s: want %s, not %s:\n%s", tc.role, tc.has, tc.lacks, body)
			}
			status, body := get(t, c, h.url+tc.lackPath)
			if status != http.StatusNotFound || !strings.Contains(body, tc.notice) || strings.Contains(body, "Bad Request") {
				t.Errorf("%s on a %s: status %d\n%s", tc.lackPath, tc.role, status, body)
			}
		})
	}
}

// TestEmptyStatesSayWhatTheyMean: no bar for $0.00 and no "0.0 of 0.0",
// but a sentence.
func TestEmptyStatesSayWhatTheyMean(t *testing.T) {
	h := newHarnessAs(t, "provider")
	h.fake.empty = true
	c, _ := h.login(t)
	_, body := get(t, c, h.url+"/ui/provider")
	for _, want := range []string{"Nothing earned in the last 7 days", "No GPU-hours offered in the last 7 days", "No GPU telemetry yet"} {
		if !strings.Contains(body, want) {
			t.Errorf("provider page lacks %q", want)
		}
	}
	if strings.Contains(body, "<svg") || strings.Contains(body, "0.0 of 0.0") || strings.Contains(body, "$0.00, fill") {
		t.Errorf("empty provider page draws or prints nothing-as-something:\n%s", body)
	}
	h = newHarness(t)
	h.fake.empty = true
	c, _ = h.login(t)
	_, body = get(t, c, h.url+"/ui/jobs")
	if !strings.Contains(body, "No spending in the last 7 days") || strings.Contains(body, "<svg") || strings.Contains(body, "$0.00") {
		t.Errorf("empty jobs page:\n%s", body)
	}
	_, body = get(t, c, h.url+"/ui/market")
	if !strings.Contains(body, "No awards seen in the last 24 hours") {
		t.Errorf("empty price index:\n%s", body)
	}
}

func TestMarketShowsAQueryErrorInline(t *testing.T) {
	h := newHarness(t)
	c, _ := h.login(t)
	status, body := get(t, c, h.url+"/ui/market?q=bad")
	if status != http.StatusOK {
		t.Fatalf("status %d", status)
	}
	if !strings.Contains(body, `role="alert"`) || !strings.Contains(body, "did you mean &#34;gpu&#34;?") {
		t.Errorf("no inline error with the suggestion in %s", body)
	}
	if strings.Contains(body, `class="offer"`) {
		t.Error("offers shown for a query that did not parse")
	}
}

func TestUnknownJobIsA404Page(t *testing.T) {
	h := newHarness(t)
	c, _ := h.login(t)
	status, body := get(t, c, h.url+"/ui/jobs/nope")
	if status != http.StatusNotFound || !strings.Contains(body, "no job nope") {
		t.Errorf("status %d, body %s", status, body)
	}
}

func TestSubmitFromTheForm(t *testing.T) {
	h := newHarness(t)
	c, csrf := h.login(t)
	res := post(t, c, h.url+"/ui/jobs", url.Values{
		"csrf": {csrf}, "name": {"demo"}, "module": {"bafymodule"}, "command": {"160\n--fast\n"},
		"gpus": {"2"}, "gpu": {"h100, a100"}, "tier": {"gold"}, "max_price": {"2.5"}, "duration": {"1m"}, "bid_window": {"2s"},
	})
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/ui/jobs/"+fakeJob {
		t.Fatalf("submit: %d to %q", res.StatusCode, res.Header.Get("Location"))
	}
	var got auction.JobSpec
	if err := yaml.Unmarshal([]byte(h.fake.submitted[0]), &got); err != nil {
		t.Fatal(err)
	}
	if got.Name != "demo" || got.Module != "bafymodule" || strings.Join(got.Command, "|") != "160|--fast" ||
		got.GPUs == nil || *got.GPUs != 2 || strings.Join(got.GPU, "|") != "h100|a100" || got.Tier != "gold" ||
		got.MaxPrice != 2.5 || got.Duration != "1m" || got.BidWindow != "2s" {
		t.Errorf("spec from the form: %+v\n%s", got, h.fake.submitted[0])
	}
}

func TestSubmitErrorsShowOnTheForm(t *testing.T) {
	h := newHarness(t)
	c, csrf := h.login(t)
	for _, tc := range []struct {
		name string
		form url.Values
		want string
	}{
		{"pasted YAML refused by the node", url.Values{"yaml": {"nonsense\n"}, "name": {"kept"}}, "max_price: required"},
		{"GPU count not a number", url.Values{"gpus": {"two"}, "name": {"kept"}}, "GPUs &#34;two&#34;: want a whole number"},
		{"price not a number", url.Values{"max_price": {"cheap"}, "name": {"kept"}}, "max price &#34;cheap&#34;"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.form.Set("csrf", csrf)
			res, err := c.PostForm(h.url+"/ui/jobs", tc.form)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			var b bytes.Buffer
			if _, err := b.ReadFrom(res.Body); err != nil {
				t.Fatal(err)
			}
			body := b.String()
			if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, tc.want) || !strings.Contains(body, `value="kept"`) {
				t.Errorf("status %d; want 400 with %q and the form refilled:\n%s", res.StatusCode, tc.want, body)
			}
		})
	}
}

func TestJobEventsStream(t *testing.T) {
	h := newHarness(t)
	c, _ := h.login(t)
	status, body := get(t, c, h.url+"/ui/jobs/"+fakeJob+"/events")
	if status != http.StatusOK {
		t.Fatalf("status %d", status)
	}
	if n := strings.Count(body, "event: job\n"); n != 3 {
		t.Errorf("%d job events, want 3:\n%s", n, body)
	}
	if !strings.Contains(body, `"kind":"award"`) || !strings.Contains(body, `"state":"running"`) || !strings.HasSuffix(body, "event: end\ndata: {\"state\":\"running\"}\n\n") {
		t.Errorf("stream:\n%s", body)
	}
}

func TestDownloads(t *testing.T) {
	h := newHarness(t)
	c, _ := h.login(t)
	for _, tc := range []struct {
		path, want, disposition string
	}{
		{"/ui/jobs/" + fakeJob + "/log", "start: n=160\ndone\n", ""},
		{"/ui/jobs/" + fakeJob + "/result", "tar bytes", `attachment; filename="bafyresult.tar"`},
		{"/ui/leases/" + fakeLease + "/attestations", `{"lease":"lease-1","entries":[]}`, `attachment; filename="attestations-lease-1.json"`},
	} {
		t.Run(tc.path, func(t *testing.T) {
			res, err := c.Get(h.url + tc.path)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			var b bytes.Buffer
			_, _ = b.ReadFrom(res.Body)
			if res.StatusCode != http.StatusOK || b.String() != tc.want || res.Header.Get("Content-Disposition") != tc.disposition {
				t.Errorf("%d %q %q", res.StatusCode, b.String(), res.Header.Get("Content-Disposition"))
			}
		})
	}
}

func TestStaticAssetsAndHeaders(t *testing.T) {
	h := newHarness(t)
	c := newClient(t)
	for _, p := range []string{"/ui/static/app.css", "/ui/static/app.js"} {
		res, err := c.Get(h.url + p)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Errorf("%s: %d", p, res.StatusCode)
		}
	}
	res, err := c.Get(h.url + "/ui/login")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("CSP %q", csp)
	}
}

// TestProviderPageChartsGPUTelemetry: each metric is a chart with a line
// per GPU, axes in its unit, and a legend naming the GPUs by model; a host
// with no samples yet says so.
func TestProviderPageChartsGPUTelemetry(t *testing.T) {
	h := newHarnessAs(t, "provider")
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	h.fake.gpuHistory = []api.GPUSeries{
		{UUID: "GPU-1", Name: "NVIDIA H100", Points: []api.GPUPoint{
			{At: t0, UtilPct: 10, PowerW: 100, TempC: 40, MemUsedMiB: 1000},
			{At: t0.Add(10 * time.Second), UtilPct: 90, PowerW: 600, TempC: 70, MemUsedMiB: 60000},
		}},
		{UUID: "GPU-2"},
	}
	c, _ := h.login(t)
	status, body := get(t, c, h.url+"/ui/provider")
	if status != http.StatusOK {
		t.Fatalf("status %d", status)
	}
	for _, w := range []string{`data-points="2"`, "Utilization (%), last hour", "Power (W), last hour", "Temperature (°C)", "Memory used (GiB)",
		"GPU 0 · NVIDIA H100: now 90%", "GPU 0 · NVIDIA H100: now 600 W", ">600 W</text>", ">100%</text>", "time (UTC)", ">10:00:00</text>"} {
		if !strings.Contains(body, w) {
			t.Errorf("provider page lacks %q", w)
		}
	}
	h.fake.gpuHistory = []api.GPUSeries{{UUID: "GPU-2"}}
	if _, body := get(t, c, h.url+"/ui/provider"); !strings.Contains(body, "No GPU telemetry yet") {
		t.Error("a host without samples does not say so")
	}
}
