package ui_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestServiceEndpointInABrowser opens a replicated service's job page in
// headless Chromium: it shows the replicas serving now and, per replica
// and for the service, requests, requests/s, p95 latency, p95 time to
// first token, tokens and $/1M tokens, and reloads those counts while the
// page stays open. A job without an endpoint has no such table.
func TestServiceEndpointInABrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	browser := newBrowser(t)
	h := newHarness(t)
	ctx, cancel := context.WithTimeout(browser, 2*time.Minute)
	defer cancel()
	must(t, ctx, "sign in", chromedp.Navigate(h.url+"/ui/login"), chromedp.SendKeys(chromedp.CSS("#token"), token),
		chromedp.Submit(chromedp.CSS("#token")), chromedp.WaitVisible(chromedp.CSS(`nav[aria-label="Main"]`)))

	must(t, ctx, "the service's job page", chromedp.Navigate(h.url+"/ui/jobs/"+fakeService), chromedp.WaitVisible(chromedp.CSS("#service")))
	if n := eval[string](t, ctx, `document.getElementById("service-replicas").textContent`); n != "2" {
		t.Errorf("replicas serving: %q, want 2 (one of three was replaced)", n)
	}
	head := eval[string](t, ctx, `[...document.querySelectorAll("#service thead th")].map(th => th.textContent).join("|")`)
	if head != "Replica|Provider|Requests|Req/s|p95 latency|p95 TTFT|Tokens|$/1M tokens" {
		t.Errorf("service table columns: %q", head)
	}
	rows := eval[[]string](t, ctx, `[...document.querySelectorAll("#service tbody tr")].map(tr => [...tr.cells].map(c => c.textContent).join("|"))`)
	if len(rows) != 4 {
		t.Fatalf("service table rows: %q, want 3 replicas and the service", rows)
	}
	for i, want := range []string{"1|12D3Ko", "2 (replaced)|12D3Ko", "Service||"} {
		if !strings.HasPrefix(rows[i+1], want) {
			t.Errorf("row %d: %q, want it to start %q", i+1, rows[i+1], want)
		}
	}
	if !strings.HasSuffix(rows[1], "|7|2.5|241.3 ms|12.7 ms|70|$10.0000") {
		t.Errorf("replica 1: %q", rows[1])
	}
	if !strings.HasSuffix(rows[2], "|0|-") {
		t.Errorf("a replica that served no token has no $/1M tokens: %q", rows[2])
	}
	// The fake counts one more request on each read of the job: the page
	// reloads the table (every 5 s) while it is open.
	first := totalRequests(t, ctx)
	must(t, ctx, "the table reloads", chromedp.Poll[chromedp.Void](
		`Number(document.querySelector("#service tr.total").cells[2].textContent) > `+strconv.Itoa(first),
		chromedp.WithPollingTimeout(30*time.Second)))

	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(filepath.Join(screenshotDir(t), "service.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}

	c, _ := h.login(t)
	if status, body := get(t, c, h.url+"/ui/jobs/"+fakeJob); status != http.StatusOK || strings.Contains(body, "job-service") {
		t.Errorf("a job without an endpoint shows a service table (status %d)", status)
	}
}

func totalRequests(t *testing.T, ctx context.Context) int {
	t.Helper()
	s := eval[string](t, ctx, `document.querySelector("#service tr.total").cells[2].textContent`)
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("service requests %q: %v", s, err)
	}
	return n
}
