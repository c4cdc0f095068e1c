package ui

import (
	"fmt"
	"math"

	"github.com/idlegrid/idlegrid/node/api"
)

// rangeChart is the price index: one row per GPU model and tier, named on
// the left, its p10..p90 range as a bar on a USD axis from zero, its
// median as a mark.
type rangeChart struct {
	Title string
	Empty string
	plot
	Rows []rangeRow
	// LabelX is where the row names end (right-aligned).
	LabelX float64
}

// rangeRow is one model and tier.
type rangeRow struct {
	Label         string
	LabelY, Y, Ht float64
	X, Wd, MarkX  float64
	Value         string // the tooltip
}

const (
	rangeLeft = 180.0 // room for "h100-sxm-80gb silver"
	rangeRowH = 26.0
)

// priceChart draws each model and tier's cleared prices: p10..p90 and the
// median, in USD per GPU-hour.
func priceChart(p api.Prices, window string) rangeChart {
	c := rangeChart{Title: "Cleared price per GPU-hour, last " + window + ": p10 to p90 (bar), median (mark)"}
	if len(p.Stats) == 0 {
		c.Empty = "No awards seen in the last " + window + ": prices appear here as auctions close and their signed summaries reach this node."
		return c
	}
	h := chartTop + float64(len(p.Stats))*rangeRowH + 40
	c.plot = newPlot(h, "", "USD per GPU-hour")
	c.Left, c.LabelX = rangeLeft, rangeLeft-8
	maxV := 0.0
	for _, st := range p.Stats {
		maxV = math.Max(maxV, st.P90USD)
	}
	top, step := niceScale(maxV, 0)
	x := func(v float64) float64 { return round1(c.Left + v/top*(c.Right-c.Left)) }
	label := usdTicks(step)
	for v := 0.0; v <= top+step/1e6; v += step {
		c.XTicks = append(c.XTicks, tick{Pos: x(v), Label: label(v)})
	}
	for i, st := range p.Stats {
		y := chartTop + float64(i)*rangeRowH
		r := rangeRow{
			Label: st.Model + " " + st.Tier, LabelY: round1(y + rangeRowH/2 + 4), Y: round1(y + 6), Ht: rangeRowH - 12,
			X: x(st.P10USD), MarkX: x(st.MedianUSD),
			Value: fmt.Sprintf("%s %s: median $%.2f, p10 $%.2f, p90 $%.2f (%d awards)", st.Model, st.Tier, st.MedianUSD, st.P10USD, st.P90USD, st.Awards),
		}
		// A range of one price is a line; draw it wide enough to see.
		r.Wd = math.Max(x(st.P90USD)-r.X, 3)
		c.Rows = append(c.Rows, r)
	}
	return c
}
