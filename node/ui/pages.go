package ui

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/idlegrid/idlegrid/node/api"
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

func (u *UI) getMarket(w http.ResponseWriter, r *http.Request, s *session) error {
	q := r.URL.Query()
	query, sortBy := q.Get("q"), q.Get("sort")
	window := q.Get("window")
	if !slices.Contains(marketWindows, window) {
		window = "24h"
	}
	data := map[string]any{"Title": "Market", "Q": query, "Sort": sortBy, "Window": window, "Windows": marketWindows}
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
	data["PriceChart"] = priceChart(prices)
	u.render(w, http.StatusOK, "market", s, data)
	return nil
}

// priceChart draws each model and tier's p10..p90 range with its median.
func priceChart(p api.Prices) chart {
	cols := make([]column, 0, len(p.Stats))
	for _, st := range p.Stats {
		cols = append(cols, column{
			Label: st.Model + " " + st.Tier, Low: st.P10USD, Mark: st.MedianUSD, Val: st.P90USD,
			Text: fmt.Sprintf("%s %s: median $%.2f, p10 $%.2f, p90 $%.2f (%d awards)", st.Model, st.Tier, st.MedianUSD, st.P10USD, st.P90USD, st.Awards),
		})
	}
	return newChart("Price per GPU-hour, p10 to p90, median marked, last "+p.Window, "USD", cols)
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
	for _, d := range earn.Days {
		ecols = append(ecols, column{Label: d.Day, Val: d.EarnedUSD, Text: fmt.Sprintf("%s: $%.2f from %d leases", d.Day, d.EarnedUSD, d.Leases)})
		fcols = append(fcols, column{Label: d.Day, Val: d.FillRate * 100, Text: fmt.Sprintf("%s: %.0f%% filled (%.1f of %.1f GPU-hours)", d.Day, d.FillRate*100, d.LeasedGPUHours, d.OfferedGPUHours)})
	}
	if hist, err := u.b.GPUHistory(); err == nil {
		charts := make([]lineChart, 0, len(hist))
		for _, h := range hist {
			charts = append(charts, newLineChart(h))
		}
		data["GPUCharts"] = charts
	}
	data["EarnChart"] = newChart("Earned per day", "USD", ecols)
	data["FillChart"] = newChart("Fill rate per day", "%", fcols)
	leases, err := u.b.Leases()
	if err != nil {
		return fmt.Errorf("leases: %w", err)
	}
	data["Leases"] = filterLeases(leases, "provider")
	u.render(w, http.StatusOK, "provider", s, data)
	return nil
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
