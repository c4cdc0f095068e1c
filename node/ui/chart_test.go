package ui

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/node/api"
)

func TestBarChartHasAxesFromZero(t *testing.T) {
	c := newBarChart("t", "USD", "day", "nothing", []column{{Label: "a", Val: 1}, {Label: "b", Val: 4}, {Label: "c", Val: 0}}, nil, 0)
	if c.Empty != "" || len(c.Bars) != 3 {
		t.Fatalf("chart %+v", c)
	}
	a, b, zero := c.Bars[0], c.Bars[1], c.Bars[2]
	if b.Y+b.Ht != c.Base || a.Y+a.Ht != c.Base {
		t.Errorf("bars %+v %+v do not stand on the axis at %v", a, b, c.Base)
	}
	if got, want := a.Ht, round1(b.Ht/4); got < want-0.2 || got > want+0.2 {
		t.Errorf("a quarter of the largest value is %v high, want %v", got, want)
	}
	if zero.Ht != 0 {
		t.Errorf("a zero bar is %v high", zero.Ht)
	}
	// The scale is 0..$4 in $1 steps: five labelled ticks, the lowest at
	// the axis.
	var labels []string
	for _, tk := range c.YTicks {
		labels = append(labels, tk.Label)
	}
	if strings.Join(labels, " ") != "$0 $1 $2 $3 $4" || c.YTicks[0].Pos != c.Base {
		t.Errorf("y ticks %+v", c.YTicks)
	}
	if len(c.XTicks) != 3 || c.XTicks[1].Label != "b" {
		t.Errorf("x ticks %+v", c.XTicks)
	}
}

func TestBarChartWithoutDataSaysSo(t *testing.T) {
	for _, cols := range [][]column{nil, {{Label: "zero", Val: 0}}} {
		if c := newBarChart("t", "USD", "day", "No spending yet.", cols, nil, 0); len(c.Bars) != 0 || c.Empty != "No spending yet." {
			t.Errorf("%v: %+v", cols, c)
		}
	}
	// A share on a fixed 0..100% axis draws its zeros: 0% filled is data.
	c := newBarChart("t", "%", "day", "none offered", []column{{Label: "a", Val: 0}}, pctLabel, 100)
	if c.Empty != "" || len(c.Bars) != 1 || c.YTicks[len(c.YTicks)-1].Label != "100%" {
		t.Errorf("fill chart %+v", c)
	}
}

func TestNiceScale(t *testing.T) {
	for _, tc := range []struct{ max, floor, top, step float64 }{
		{4, 0, 4, 1}, {7.5, 0, 8, 2}, {0.3, 0, 0.3, 0.1}, {612, 0, 800, 200}, {12, 100, 100, 25}, {0, 0, 1, 0.25},
	} {
		top, step := niceScale(tc.max, tc.floor)
		if round1(top*100) != round1(tc.top*100) || round1(step*100) != round1(tc.step*100) {
			t.Errorf("niceScale(%v, %v) = %v, %v; want %v, %v", tc.max, tc.floor, top, step, tc.top, tc.step)
		}
	}
}

// TestGPUChartsUseAbsoluteScales: power in W from 0, utilization 0..100%,
// so an idle 10 W GPU sits near the bottom; every GPU is named by its
// model in the legend, and the x axis is labelled with times.
func TestGPUChartsUseAbsoluteScales(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	var idle, busy []api.GPUPoint
	for i := range 31 {
		at := t0.Add(time.Duration(i) * 10 * time.Second)
		idle = append(idle, api.GPUPoint{At: at, PowerW: 10, TempC: 30})
		busy = append(busy, api.GPUPoint{At: at, UtilPct: 90, PowerW: 600, TempC: 75, MemUsedMiB: 40 << 10})
	}
	charts := gpuCharts([]api.GPUSeries{{UUID: "GPU-a", Name: "NVIDIA H100", Points: idle}, {UUID: "GPU-b", Name: "NVIDIA L40S", Points: busy}})
	if len(charts) != 4 {
		t.Fatalf("%d charts, want utilization, power, temperature and memory", len(charts))
	}
	util, power := charts[0], charts[1]
	if top := util.YTicks[len(util.YTicks)-1].Label; top != "100%" {
		t.Errorf("utilization axis tops at %s", top)
	}
	if top := power.YTicks[len(power.YTicks)-1].Label; top != "600 W" {
		t.Errorf("power axis tops at %s, want 600 W", top)
	}
	// The idle line's y: 10 W of 600 W, near the axis.
	first := strings.Fields(power.Lines[0].Points)[0]
	y, _ := strconv.ParseFloat(first[strings.IndexByte(first, ',')+1:], 64)
	if y < power.Base-5 || !strings.HasPrefix(power.Lines[0].Legend, "GPU 0 · NVIDIA H100: now 10 W") || !strings.Contains(power.Lines[1].Legend, "NVIDIA L40S") {
		t.Errorf("idle line at y=%v, legends %q, %q", y, power.Lines[0].Legend, power.Lines[1].Legend)
	}
	if len(power.XTicks) < 3 || power.XTicks[0].Label != "10:00" {
		t.Errorf("time ticks %+v", power.XTicks)
	}
	if charts := gpuCharts([]api.GPUSeries{{UUID: "GPU-a"}}); charts != nil {
		t.Errorf("charts for a GPU without samples: %+v", charts)
	}
}

func TestPriceChartNamesEveryModel(t *testing.T) {
	c := priceChart(api.Prices{Stats: []api.PriceStat{
		{Model: "h100-sxm-80gb", Tier: "silver", Awards: 3, P10USD: 2.3, MedianUSD: 2.5, P90USD: 2.9},
		{Model: "rtx-4090", Tier: "bronze", Awards: 2, P10USD: 0.44, MedianUSD: 0.5, P90USD: 0.6},
	}}, "24h")
	if len(c.Rows) != 2 || c.Rows[0].Label != "h100-sxm-80gb silver" || c.Rows[1].Label != "rtx-4090 bronze" {
		t.Fatalf("rows %+v", c.Rows)
	}
	if r := c.Rows[0]; !(r.X < r.MarkX && r.MarkX < r.X+r.Wd) {
		t.Errorf("median mark outside its range: %+v", r)
	}
	if len(c.XTicks) < 3 || c.XTicks[0].Label != "$0" || c.XTitle != "USD per GPU-hour" {
		t.Errorf("price axis %+v %q", c.XTicks, c.XTitle)
	}
	if e := priceChart(api.Prices{}, "24h"); e.Empty == "" || len(e.Rows) != 0 {
		t.Errorf("empty index: %+v", e)
	}
}

func TestUSDTicksShowTheStep(t *testing.T) {
	for _, tc := range []struct {
		step float64
		v    float64
		want string
	}{{1, 3, "$3"}, {0.5, 1.5, "$1.50"}, {0.25, 0.75, "$0.75"}, {0.001, 0.003, "$0.003"}, {0.0025, 0.0075, "$0.0075"}, {200, 400, "$400"}} {
		if got := usdTicks(tc.step)(tc.v); got != tc.want {
			t.Errorf("usdTicks(%v)(%v) = %q, want %q", tc.step, tc.v, got, tc.want)
		}
	}
}
