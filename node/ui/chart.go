package ui

import (
	"fmt"
	"math"
	"time"
)

// Charts are SVG computed in Go and drawn by the templates in
// partials.html: no script, no library, and they print. Every chart has a
// value axis from zero with labelled ticks in its unit (so an idle 10 W
// line sits near the bottom, not at the top), a labelled category or time
// axis, and a legend or labels naming what is drawn. A chart with nothing
// to draw is only its Empty text, which says what that means.

// chart is a column chart (one bar per day) or, with range bars, the
// price index.
type chart struct {
	Title string
	// Empty, when set, replaces the drawing: why there is nothing.
	Empty string
	plot
	Bars []bar
}

// plot is the frame every chart shares: the view box, the plot area and
// its ticks.
type plot struct {
	W, H                    float64
	Left, Right, Top, Base  float64
	YTicks, XTicks          []tick
	YTitle                  string // the value axis' unit, shown above it
	XTitle                  string // the category or time axis, shown below it
	XTitleX, XTitleY, YTopY float64
}

// tick is a labelled position on an axis.
type tick struct {
	Pos   float64
	Label string
}

// bar is one column; a range bar (Low > 0) draws Low..High with a mark.
type bar struct {
	X, Y, Wd, Ht float64
	// MarkY is the y of the median mark of a range bar (0: none).
	MarkY float64
	// Value is the text of the bar's tooltip.
	Value string
}

// column is one input of a chart: a value, or a low..high range with a
// mark inside it.
type column struct {
	Label          string
	Low, Mark, Val float64
	Text           string
}

const (
	chartW     = 480.0 // narrow, so the labels stay legible when a phone scales it down
	chartH     = 220.0
	chartLeft  = 76.0
	chartRight = 30.0 // room for the last time label
	chartTop   = 22.0
	chartBase  = chartH - 38
	maxXLabels = 5
)

// newPlot frames a chart of height h with its value axis from 0 to the
// top of the scale ticks gives.
func newPlot(h float64, yTitle, xTitle string) plot {
	p := plot{W: chartW, H: h, Left: chartLeft, Right: chartW - chartRight, Top: chartTop, Base: h - 38, YTitle: yTitle, XTitle: xTitle}
	p.XTitleX, p.XTitleY, p.YTopY = (p.Left+p.Right)/2, h-4, p.Top-8
	return p
}

// y maps a value on a scale from 0 to top.
func (p plot) y(v, top float64) float64 {
	return round1(p.Base - v/top*(p.Base-p.Top))
}

// yTicks labels the value axis from 0 to top every step.
func (p *plot) yTicks(top, step float64, label func(float64) string) {
	for v := 0.0; v <= top+step/1e6; v += step {
		p.YTicks = append(p.YTicks, tick{Pos: p.y(v, top), Label: label(v)})
	}
}

// niceScale is the top and step of a value axis from 0 that holds max
// with about four steps of 1, 2, 2.5 or 5 times a power of ten. floor is
// the least top, so a near-zero series is drawn near the bottom rather
// than blown up to full height.
func niceScale(max, floor float64) (top, step float64) {
	max = math.Max(max, floor)
	if max <= 0 {
		return 1, 0.25
	}
	raw := max / 4
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if step = m * mag; step >= raw {
			break
		}
	}
	return math.Ceil(max/step-1e-9) * step, step
}

// newBarChart draws one bar per column on a value axis from zero: USD per
// day, or a share fixed at 0..100%. All-zero input gives no drawing, only
// empty (a full bar for $0.00 would say the opposite of the truth).
func newBarChart(title, yTitle, xTitle, empty string, cols []column, label func(float64) string, fixedTop float64) chart {
	c := chart{Title: title}
	maxV := 0.0
	for _, col := range cols {
		maxV = math.Max(maxV, col.Val)
	}
	// On a fixed axis (a share) zeros are data; on a free one they are
	// nothing to draw.
	if len(cols) == 0 || maxV <= 0 && fixedTop == 0 {
		c.Empty = empty
		return c
	}
	c.plot = newPlot(chartH, yTitle, xTitle)
	top, step := niceScale(maxV, 0)
	if fixedTop > 0 {
		top, step = fixedTop, fixedTop/4
	}
	if label == nil {
		label = usdTicks(step)
	}
	c.yTicks(top, step, label)
	slot := (c.Right - c.Left) / float64(len(cols))
	wd := math.Min(slot*0.7, 40)
	every := (len(cols) + maxXLabels - 1) / maxXLabels
	for i, col := range cols {
		x := c.Left + float64(i)*slot + (slot-wd)/2
		b := bar{X: round1(x), Wd: round1(wd), Value: col.Text}
		b.Y = c.y(col.Val, top)
		b.Ht = round1(c.Base - b.Y)
		if col.Val > 0 {
			// A tiny value still shows as a sliver, never as nothing.
			b.Ht = math.Max(b.Ht, 1)
			b.Y = round1(c.Base - b.Ht)
		}
		c.Bars = append(c.Bars, b)
		// Counted from the last, so the newest day is always labelled.
		if (len(cols)-1-i)%every == 0 {
			c.XTicks = append(c.XTicks, tick{Pos: round1(x + wd/2), Label: col.Label})
		}
	}
	return c
}

// dayLabel writes "2026-11-29" as "Nov 29".
func dayLabel(day string) string {
	t, err := time.Parse(time.DateOnly, day)
	if err != nil {
		return day
	}
	return t.Format("Jan 2")
}

// usdTicks labels a USD axis with as many decimals as its step needs:
// a demo lease earns fractions of a cent, and "$0.00 $0.00 $0.00" says
// nothing.
func usdTicks(step float64) func(float64) string {
	decimals := 0
	if step < 1 || step != math.Trunc(step) {
		// Cents at least, more where the step is finer (and 2.5 steps).
		decimals = max(2, int(math.Ceil(-math.Log10(step)-1e-9)))
		if f := step * math.Pow(10, float64(decimals)); math.Abs(f-math.Round(f)) > 1e-9 {
			decimals++
		}
	}
	return func(v float64) string { return fmt.Sprintf("$%.*f", decimals, v) }
}

// usdAmount writes a sum of money: cents, or four decimals below a cent
// ("$0.0031", not "$0.00").
func usdAmount(v float64) string {
	if v > 0 && v < 0.01 {
		return fmt.Sprintf("$%.4f", v)
	}
	return fmt.Sprintf("$%.2f", v)
}

func pctLabel(v float64) string { return fmt.Sprintf("%.0f%%", v) }

// round1 keeps SVG coordinates short: a tenth of a unit is finer than a
// pixel at any width the page is shown.
func round1(v float64) float64 { return math.Round(v*10) / 10 }
