package ui

import (
	"fmt"

	"github.com/idlegrid/idlegrid/node/api"
	"github.com/idlegrid/idlegrid/node/lease"
)

// serviceView is a service job's endpoint as the job page shows it
// (issue 30): the replicas that serve now, then one row per replica and
// one for the whole service, each with requests/s, p95 latency, p95 time
// to first token, tokens and $ per million tokens.
type serviceView struct {
	Listen string
	Port   uint16
	Live   int
	Rows   []serviceRow
	Total  serviceRow
}

type serviceRow struct {
	Name, Title, Provider string
	Live                  bool
	Requests              uint64
	Rate, P95, TTFT95     string
	Tokens                uint64
	PerMTok               string
}

// newServiceView is nil when the job has no endpoint.
func newServiceView(e *api.Endpoint) *serviceView {
	if e == nil {
		return nil
	}
	v := &serviceView{Listen: e.Listen, Port: e.Port}
	for _, r := range e.Replicas {
		row := serviceStatsRow(r.EndpointStats)
		row.Name, row.Title, row.Live = fmt.Sprintf("%d", r.Slot), r.Lease, r.Live
		row.Provider = lease.Short(r.Provider)
		if r.Live {
			v.Live++
		} else {
			row.Name += " (replaced)"
		}
		v.Rows = append(v.Rows, row)
	}
	v.Total = serviceStatsRow(e.Total)
	v.Total.Name = "Service"
	return v
}

func serviceStatsRow(s api.EndpointStats) serviceRow {
	row := serviceRow{
		Requests: s.Requests, Tokens: s.Tokens(),
		Rate: fmt.Sprintf("%.1f", s.RatePerSec), P95: millis(s.P95Ms), TTFT95: millis(s.TTFTP95Ms), PerMTok: "-",
	}
	if s.Tokens() > 0 {
		row.PerMTok = fmt.Sprintf("$%.4f", s.USDPerMTok)
	}
	return row
}

// millis shows a latency; none before the first answer.
func millis(ms float64) string {
	if ms == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f ms", ms)
}
