package ui

import (
	"fmt"
	"math"
)

// chart is an SVG bar chart computed in Go and drawn by the "chart"
// template: no script, no library, and it prints.
type chart struct {
	Title string
	W, H  float64
	// Base is the y of the axis; Top the y of the maximum.
	Base, Top float64
	Max       string
	Bars      []bar
}

// bar is one column; a range bar (Low > 0) draws Low..High with a mark.
type bar struct {
	X, Y, Wd, Ht float64
	// MarkY is the y of the median mark of a range bar (0: none).
	MarkY float64
	Label string
	// Value is the text of the bar's tooltip.
	Value string
	LX    float64
}

// column is one input of a chart: a value, or a low..high range with a
// mark inside it.
type column struct {
	Label          string
	Low, Mark, Val float64
	Text           string
}

const (
	chartW    = 640.0
	chartH    = 200.0
	chartPad  = 24.0
	chartTop  = 16.0
	chartBase = chartH - chartPad
)

// newChart lays out columns on a shared scale from 0 to the largest
// value. An empty input gives a chart with no bars (the page says so).
func newChart(title, unit string, cols []column) chart {
	c := chart{Title: title, W: chartW, H: chartH, Base: chartBase, Top: chartTop}
	maxV := 0.0
	for _, col := range cols {
		maxV = math.Max(maxV, col.Val)
	}
	c.Max = fmt.Sprintf("%.2f %s", maxV, unit)
	if len(cols) == 0 || maxV <= 0 {
		return c
	}
	slot := (chartW - 8) / float64(len(cols))
	wd := math.Max(2, slot*0.7)
	y := func(v float64) float64 { return chartBase - v/maxV*(chartBase-chartTop) }
	for i, col := range cols {
		x := 4 + float64(i)*slot + (slot-wd)/2
		b := bar{X: x, Wd: wd, Label: col.Label, Value: col.Text, LX: x + wd/2}
		b.Y = y(col.Val)
		b.Ht = chartBase - b.Y
		if col.Low > 0 {
			b.Y = math.Max(chartTop, b.Y-1)
			b.Ht = y(col.Low) - b.Y + 1
			b.MarkY = y(col.Mark)
		}
		// A range of one price is a line; draw it thick enough to see.
		b.Ht = math.Max(b.Ht, 3)
		b.X, b.Y, b.Wd, b.Ht, b.MarkY, b.LX = round1(b.X), round1(b.Y), round1(b.Wd), round1(b.Ht), round1(b.MarkY), round1(b.LX)
		c.Bars = append(c.Bars, b)
	}
	return c
}

// round1 keeps SVG coordinates short: a tenth of a unit is finer than a
// pixel at any width the page is shown.
func round1(v float64) float64 { return math.Round(v*10) / 10 }
