package ui

import (
	"fmt"
	"math"
	"strings"

	"github.com/idlegrid/idlegrid/node/api"
)

// lineChart is one GPU's last hour: utilization, power, temperature and
// memory as polylines, each on its own scale from 0 to its maximum (the
// legend gives the scale), computed in Go and drawn by the "lines"
// template.
type lineChart struct {
	Title  string
	W, H   float64
	Base   float64
	Lines  []line
	Points int
}

// line is one metric's polyline.
type line struct {
	Name   string
	Class  string
	Points string // SVG polyline points
	Legend string
}

// metric reads one value of a point.
type metric struct {
	name, class, unit string
	get               func(api.GPUPoint) float64
}

var gpuMetrics = []metric{
	{"utilization", "l-util", "%", func(p api.GPUPoint) float64 { return p.UtilPct }},
	{"power", "l-power", "W", func(p api.GPUPoint) float64 { return p.PowerW }},
	{"temperature", "l-temp", "°C", func(p api.GPUPoint) float64 { return p.TempC }},
	{"memory used", "l-mem", "MiB", func(p api.GPUPoint) float64 { return float64(p.MemUsedMiB) }},
}

// newLineChart lays out a GPU's series; one with no points has no lines
// (the page says so).
func newLineChart(s api.GPUSeries) lineChart {
	title := s.UUID
	if s.Name != "" {
		title = s.Name + " " + s.UUID
	}
	c := lineChart{Title: title, W: chartW, H: chartH, Base: chartBase, Points: len(s.Points)}
	if len(s.Points) == 0 {
		return c
	}
	t0, t1 := s.Points[0].At, s.Points[len(s.Points)-1].At
	span := math.Max(t1.Sub(t0).Seconds(), 1)
	for _, m := range gpuMetrics {
		maxV, last := 0.0, m.get(s.Points[len(s.Points)-1])
		for _, p := range s.Points {
			maxV = math.Max(maxV, m.get(p))
		}
		var b strings.Builder
		for i, p := range s.Points {
			x := 4 + p.At.Sub(t0).Seconds()/span*(chartW-8)
			y := chartBase
			if maxV > 0 {
				y = chartBase - m.get(p)/maxV*(chartBase-chartTop)
			}
			if i > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "%g,%g", round1(x), round1(y))
		}
		c.Lines = append(c.Lines, line{
			Name: m.name, Class: m.class, Points: b.String(),
			Legend: fmt.Sprintf("%s: now %.0f %s, max %.0f %s", m.name, last, m.unit, maxV, m.unit),
		})
	}
	return c
}
