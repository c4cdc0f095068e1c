package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/node/api"
)

func TestPrintEarningsShowsCosts(t *testing.T) {
	e := api.Earnings{
		Since: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), TimeZone: "Europe/Berlin", TotalUSD: 10, FillRate: 0.5, CostsSet: true,
		EarningsCosts: api.EarningsCosts{FeesUSD: 1, EnergyKWh: 0.825, EnergyUSD: 0.28875, DepreciationUSD: 48, BandwidthUSD: 2.4, NetUSD: -41.68875},
		Days: []api.EarningsDay{{Day: "2026-12-01", Leases: 1, EarnedUSD: 10, FillRate: 0.5,
			EarningsCosts: api.EarningsCosts{FeesUSD: 1, EnergyKWh: 0.825, EnergyUSD: 0.28875, DepreciationUSD: 48, BandwidthUSD: 2.4, NetUSD: -41.68875}}},
		GPUs: []api.EarningsGPU{{UUID: "GPU-a", Model: "h100-80gb", EarnedUSD: 10, FillRate: 1}},
	}
	var out bytes.Buffer
	printEarnings(&out, e)
	for _, want := range []string{"days in Europe/Berlin", "net $-41.68", "0.825", "$48.0000", "$3.4000", "h100-80gb", "NET", "UTIL"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestPrintEarningsWithoutCosts: no [costs], so net and costs are unknown
// rather than $0.
func TestPrintEarningsWithoutCosts(t *testing.T) {
	e := api.Earnings{TotalUSD: 10, EarningsCosts: api.EarningsCosts{EnergyKWh: 0.5, NetUSD: 10},
		Days: []api.EarningsDay{{Day: "2026-12-01", EarnedUSD: 10, EarningsCosts: api.EarningsCosts{NetUSD: 10}}}}
	var out bytes.Buffer
	printEarnings(&out, e)
	if !strings.Contains(out.String(), "net -") || !strings.Contains(out.String(), "costs: not set") || strings.Contains(out.String(), "$0.0000") {
		t.Errorf("output:\n%s", out.String())
	}
}

// TestPrintSpendShowsServiceTokens: a service that served tokens gets a
// row with its tokens and $/1M tokens; without one there is no table.
func TestPrintSpendShowsServiceTokens(t *testing.T) {
	s := api.Spend{TotalUSD: 0.5, Days: []api.SpendDay{{Day: "2026-12-03", Leases: 3, SpentUSD: 0.5, GPUHours: 0.1}}}
	var out bytes.Buffer
	printSpend(&out, s)
	if strings.Contains(out.String(), "SERVICE") {
		t.Errorf("no service served tokens, yet a service table:\n%s", out.String())
	}
	s.Services = []api.SpendService{{Job: "bafyservicejobxxxxxxxxxxxxxx1234", Name: "llm", PromptTokens: 200, CompletionTokens: 800, SpentUSD: 0.25, USDPerMTok: 250}}
	out.Reset()
	printSpend(&out, s)
	for _, want := range []string{"SERVICE", "$/1M TOK", "llm", "200", "800", "1000", "$0.2500", "$250.0000"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("spend output lacks %q:\n%s", want, out.String())
		}
	}
}
