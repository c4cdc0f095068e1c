package ui

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/idlegrid/idlegrid/node/api"
	"github.com/idlegrid/idlegrid/node/lease"
)

// lineChart is one metric of every GPU over the last hour: a line per GPU
// on an absolute scale (utilization 0..100%, power from 0 W), time on the
// x axis, and a legend naming each GPU by its model.
type lineChart struct {
	Title string
	plot
	Lines []line
	// Points is the most samples any GPU has (the browser test waits on it).
	Points int
}

// line is one GPU's polyline.
type line struct {
	Class  string // its colour: g0..g7
	Points string // SVG polyline points
	Legend string
}

// metric reads one value of a point, with its axis.
type metric struct {
	title, unit string
	get         func(api.GPUPoint) float64
	// top fixes the scale (utilization: 100%); else floor is the least
	// top, so an idle GPU's few watts sit near the bottom.
	top, floor float64
	label      func(float64) string
}

var gpuMetrics = []metric{
	{title: "Utilization", unit: "%", get: func(p api.GPUPoint) float64 { return p.UtilPct }, top: 100, label: pctLabel},
	{title: "Power", unit: "W", get: func(p api.GPUPoint) float64 { return p.PowerW }, floor: 100, label: unitLabel("W")},
	{title: "Temperature", unit: "°C", get: func(p api.GPUPoint) float64 { return p.TempC }, floor: 100, label: unitLabel("°C")},
	{title: "Memory used", unit: "GiB", get: func(p api.GPUPoint) float64 { return float64(p.MemUsedMiB) / 1024 }, floor: 8, label: unitLabel("GiB")},
}

func unitLabel(unit string) func(float64) string {
	return func(v float64) string {
		if v != math.Trunc(v) {
			return fmt.Sprintf("%.1f %s", v, unit)
		}
		return fmt.Sprintf("%.0f %s", v, unit)
	}
}

// gpuCharts lays out one chart per metric for every GPU with samples; a
// host with none gets no charts (the page says so).
func gpuCharts(hist []api.GPUSeries) []lineChart {
	var t0, t1 time.Time
	points := 0
	for _, s := range hist {
		points = max(points, len(s.Points))
		for _, p := range s.Points {
			if t0.IsZero() || p.At.Before(t0) {
				t0 = p.At
			}
			if p.At.After(t1) {
				t1 = p.At
			}
		}
	}
	if points == 0 {
		return nil
	}
	span := math.Max(t1.Sub(t0).Seconds(), 1)
	var out []lineChart
	for _, m := range gpuMetrics {
		c := lineChart{Title: fmt.Sprintf("%s (%s), last hour", m.title, m.unit), Points: points}
		c.plot = newPlot(chartH, m.unit, "time (UTC)")
		maxV := 0.0
		for _, s := range hist {
			for _, p := range s.Points {
				maxV = math.Max(maxV, m.get(p))
			}
		}
		top, step := m.top, m.top/4
		if top == 0 {
			top, step = niceScale(maxV, m.floor)
		}
		c.yTicks(top, step, m.label)
		x := func(t time.Time) float64 { return round1(c.Left + t.Sub(t0).Seconds()/span*(c.Right-c.Left)) }
		c.XTicks = timeTicks(t0, t1, x)
		for i, s := range hist {
			if len(s.Points) == 0 {
				continue
			}
			var b strings.Builder
			for j, p := range s.Points {
				if j > 0 {
					b.WriteByte(' ')
				}
				fmt.Fprintf(&b, "%g,%g", x(p.At), c.y(math.Min(m.get(p), top), top))
			}
			last := s.Points[len(s.Points)-1]
			c.Lines = append(c.Lines, line{
				Class: fmt.Sprintf("g%d", i%8), Points: b.String(),
				Legend: fmt.Sprintf("%s: now %s", gpuName(i, s), m.label(math.Round(m.get(last)*10)/10)),
			})
		}
		out = append(out, c)
	}
	return out
}

// gpuName is how the legend names a GPU: its index and model.
func gpuName(i int, s api.GPUSeries) string {
	name := s.Name
	if name == "" {
		name = lease.Short(s.UUID)
	}
	return fmt.Sprintf("GPU %d · %s", i, name)
}

// timeTicks labels the time axis at whole minutes, about five of them.
func timeTicks(t0, t1 time.Time, x func(time.Time) float64) []tick {
	span := t1.Sub(t0)
	if span < time.Second {
		return []tick{{Pos: x(t0), Label: t0.UTC().Format("15:04:05")}}
	}
	step := time.Minute
	for _, s := range []time.Duration{time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute} {
		step = s
		if span/s <= 5 {
			break
		}
	}
	layout := "15:04"
	if span < 2*time.Minute {
		step, layout = span/2, "15:04:05"
	}
	var out []tick
	for t := t0.Truncate(step); !t.After(t1); t = t.Add(step) {
		if t.Before(t0) {
			continue
		}
		out = append(out, tick{Pos: x(t), Label: t.UTC().Format(layout)})
	}
	if len(out) == 0 {
		out = append(out, tick{Pos: x(t0), Label: t0.UTC().Format(layout)})
	}
	return out
}
