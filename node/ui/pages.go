package ui

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/idlegrid/idlegrid/node/api"
	"github.com/idlegrid/idlegrid/node/words"
)

// topic is one row of the overview's topic table.
type topic struct {
	Name  string
	Peers int
}

func (u *UI) getOverview(w http.ResponseWriter, _ *http.Request, s *session) error {
	st := u.b.Status()
	var topics []topic
	for name, n := range st.TopicPeers {
		topics = append(topics, topic{name, n})
	}
	slices.SortFunc(topics, func(a, b topic) int { return compareStrings(a.Name, b.Name) })
	u.render(w, http.StatusOK, "overview", s, map[string]any{
		"Title": "Overview", "ID": u.b.Identity(), "Status": st, "Peers": u.b.Peers(), "Topics": topics,
	})
	return nil
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// marketWindows are the windows of the price index's chart.
var marketWindows = []string{"1h", "24h", "168h"}

// windowNames are what the window menu shows for each.
var windowNames = map[string]string{"1h": "last hour", "24h": "last 24 hours", "168h": "last 7 days"}

func (u *UI) getMarket(w http.ResponseWriter, r *http.Request, s *session) error {
	q := r.URL.Query()
	query, sortBy := q.Get("q"), q.Get("sort")
	window := q.Get("window")
	if !slices.Contains(marketWindows, window) {
		window = "24h"
	}
	data := map[string]any{"Title": "Market", "Q": query, "Sort": sortBy, "Window": window, "Windows": marketWindows, "WindowNames": windowNames}
	res, err := u.b.Search(r.Context(), query, sortBy, 200, query != "")
	var apiErr *api.Error
	switch {
	case errors.As(err, &apiErr) && apiErr.Status < 500:
		// A query that does not parse is the user's to fix: show why
		// next to the box.
		data["SearchErr"] = apiErr.Message
	case err != nil:
		return fmt.Errorf("search: %w", err)
	default:
		data["Result"] = res
	}
	d, _ := time.ParseDuration(window)
	prices, err := u.b.Prices(d)
	if err != nil {
		return fmt.Errorf("prices: %w", err)
	}
	data["Prices"] = prices
	data["PriceChart"] = priceChart(prices, windowNames[window][len("last "):])
	u.render(w, http.StatusOK, "market", s, data)
	return nil
}

// days reads ?days= for the earnings and spend views: 7 unless 1..90.
func days(r *http.Request) int {
	d, err := strconv.Atoi(r.URL.Query().Get("days"))
	if err != nil || d < 1 || d > 90 {
		return 7
	}
	return d
}

func (u *UI) getProvider(w http.ResponseWriter, r *http.Request, s *session) error {
	if role := u.role(); role != "provider" {
		u.notHere(w, s, "Provider", "This node is a "+role+": it offers no GPUs, so it has no provider page. "+
			"A provider's own dashboard shows its capacity, its GPUs' telemetry and its earnings.")
		return nil
	}
	n := days(r)
	data := map[string]any{"Title": "Provider", "Days": n}
	offer, err := u.b.Capacity()
	var apiErr *api.Error
	switch {
	case errors.As(err, &apiErr) && apiErr.Status < 500:
		// Not a provider, or no offer yet: the page says which.
		data["OfferErr"] = apiErr.Message
	case err != nil:
		return fmt.Errorf("capacity: %w", err)
	default:
		data["Offer"] = offer
	}
	earn, err := u.b.Earnings(u.opts.Now().AddDate(0, 0, -n))
	if err != nil {
		return fmt.Errorf("earnings: %w", err)
	}
	data["Earnings"] = earn
	ecols := make([]column, 0, len(earn.Days))
	fcols := make([]column, 0, len(earn.Days))
	offered := 0.0
	for _, d := range earn.Days {
		day := dayLabel(d.Day)
		ecols = append(ecols, column{Label: day, Val: d.EarnedUSD, Text: fmt.Sprintf("%s: %s from %s", day, usdAmount(d.EarnedUSD), words.Plural(d.Leases, "lease"))})
		offered += d.OfferedGPUHours
		if d.OfferedGPUHours > 0 {
			fcols = append(fcols, column{Label: day, Val: d.FillRate * 100,
				Text: fmt.Sprintf("%s: %.0f%% filled (%s of %s leased)", day, d.FillRate*100, gpuHours(d.LeasedGPUHours), gpuHours(d.OfferedGPUHours))})
		}
	}
	data["Offered"] = offered
	if hist, err := u.b.GPUHistory(); err == nil {
		data["GPUCharts"] = gpuCharts(hist)
	}
	period := fmt.Sprintf("the last %d days", n)
	data["EarnChart"] = newBarChart("Earned per day (USD)", "USD", "day", "Nothing earned in "+period+
		": earnings appear here as renters pay for leases.", ecols, nil, 0)
	data["FillChart"] = newBarChart("Fill rate per day: GPU-hours leased of those offered (%)", "%", "day", "No GPU-hours offered in "+period+
		": the fill rate appears once the provider has advertised its GPUs.", fcols, pctLabel, 100)
	leases, err := u.b.Leases()
	if err != nil {
		return fmt.Errorf("leases: %w", err)
	}
	data["Leases"] = filterLeases(leases, "provider")
	u.render(w, http.StatusOK, "provider", s, data)
	return nil
}

// gpuHours writes GPU time as a person reads it: "2.5 GPU-hours", or in
// minutes below a tenth of an hour ("3.0 GPU-minutes", never "0.0 of 0.0").
func gpuHours(h float64) string {
	if h > 0 && h < 0.1 {
		return fmt.Sprintf("%.1f GPU-minutes", h*60)
	}
	return fmt.Sprintf("%.1f GPU-hours", h)
}

func filterLeases(ls []api.Lease, side string) []api.Lease {
	var out []api.Lease
	for _, l := range ls {
		if l.Side == side {
			out = append(out, l)
		}
	}
	return out
}

func (u *UI) getTrust(w http.ResponseWriter, _ *http.Request, s *session) error {
	reps, err := u.b.Reputations()
	if err != nil {
		return fmt.Errorf("reputations: %w", err)
	}
	leases, err := u.b.Leases()
	if err != nil {
		return fmt.Errorf("leases: %w", err)
	}
	frauds := 0
	for _, r := range reps {
		if r.Fraud {
			frauds++
		}
	}
	u.render(w, http.StatusOK, "trust", s, map[string]any{"Title": "Trust", "Reps": reps, "Leases": leases, "Frauds": frauds})
	return nil
}

func (u *UI) getAttestations(w http.ResponseWriter, r *http.Request, _ *session) error {
	b, err := u.b.Attestations(r.Context(), r.PathValue("id"))
	if err != nil {
		return fmt.Errorf("attestations: %w", err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Disposition", `attachment; filename="attestations-`+safeName(r.PathValue("id"))+`.json"`)
	_, err = w.Write(b)
	return err
}

// safeName keeps the letters, digits, '-' and '_' of an ID for a file
// name in a header.
func safeName(id string) string {
	b := make([]byte, 0, len(id))
	for i := 0; i < len(id) && len(b) < 100; i++ {
		c := id[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' {
			b = append(b, c)
		}
	}
	return string(b)
}
