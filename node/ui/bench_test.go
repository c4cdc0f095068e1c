package ui_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/idlegrid/idlegrid/node/api/client"
)

// BenchmarkDashboard measures, in headless Chromium against a devnet's
// renter on loopback with the browser cache off: the bytes each page
// transfers (HTML, stylesheet, script, headers included) and the time
// until the overview is interactive (DOMContentLoaded done, its deferred
// script run), as the median of 10 loads per iteration.
func BenchmarkDashboard(b *testing.B) {
	browser := newBrowser(b)
	base, token := startDevnet(b, 1)
	ctx, cancel := context.WithTimeout(browser, 3*time.Minute)
	defer cancel()
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		b.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			b.Fatalf("%s: %v", what, err)
		}
	}
	do("sign in", chromedp.Navigate(base+"/ui/login"), chromedp.SendKeys(chromedp.CSS("#token"), token),
		chromedp.Submit(chromedp.CSS("#token")), chromedp.WaitVisible(chromedp.CSS(`nav[aria-label="Main"]`)))
	waitForOffers(b, base, token, 1)
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		b.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, network.SetCacheDisabled, network.SetCacheDisabledParams{CacheDisabled: true}); err != nil {
		b.Fatal(err)
	}
	var transferred atomic.Int64
	if err := chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*network.EventLoadingFinished); ok {
			transferred.Add(int64(e.EncodedDataLength))
		}
	}); err != nil {
		b.Fatal(err)
	}

	// The renter's pages (a provider's page is measured on none here).
	pages := []string{"", "market", "jobs", "trust"}
	weight := map[string]int64{}
	for _, p := range pages {
		transferred.Store(0)
		do("load /ui/"+p, chromedp.Navigate(base+"/ui/"+p), chromedp.WaitVisible(chromedp.CSS("h1")))
		weight[p] = transferred.Load()
	}

	const reps = 10
	var ms []float64
	b.ResetTimer()
	for b.Loop() {
		for range reps {
			do("load the overview", chromedp.Navigate(base+"/ui/"))
			v, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`performance.getEntriesByType("navigation")[0].domContentLoadedEventEnd`))
			if err != nil {
				b.Fatal(err)
			}
			ms = append(ms, v)
		}
	}
	// Metrics reported before the loop would be reset by it.
	maxPage := int64(0)
	for _, p := range pages {
		b.ReportMetric(float64(weight[p]), pageName(p)+"-B")
		maxPage = max(maxPage, weight[p])
	}
	b.ReportMetric(float64(maxPage), "max-page-B")
	slices.Sort(ms)
	b.ReportMetric(ms[len(ms)/2], "ms-interactive")
	b.ReportMetric(ms[len(ms)-1], "ms-interactive-max")
}

func pageName(p string) string {
	if p == "" {
		return "overview"
	}
	return p
}

// waitForOffers waits until the renter's market holds n offers, so the
// market page is measured full.
func waitForOffers(tb testing.TB, base, token string, n int) {
	tb.Helper()
	c := client.New(base, token)
	deadline := time.Now().Add(90 * time.Second)
	for {
		res, err := c.Search(context.Background(), "", client.SearchOptions{})
		if err == nil && len(res.Offers) >= n {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("the market never held %d offers: %d, %v", n, len(res.Offers), err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
