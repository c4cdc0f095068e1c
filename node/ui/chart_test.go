package ui

import "testing"

func TestChartScalesToTheLargestValue(t *testing.T) {
	c := newChart("t", "USD", []column{{Label: "a", Val: 1}, {Label: "b", Val: 4}, {Label: "r", Low: 1, Mark: 2, Val: 3}})
	if len(c.Bars) != 3 {
		t.Fatalf("%d bars", len(c.Bars))
	}
	a, b, r := c.Bars[0], c.Bars[1], c.Bars[2]
	if b.Y != chartTop || b.Y+b.Ht != chartBase {
		t.Errorf("largest bar %+v: want it from the axis to the top", b)
	}
	if got, want := a.Ht, round1((chartBase-chartTop)/4); got != want {
		t.Errorf("quarter bar height %v, want %v", got, want)
	}
	if r.Y+r.Ht >= chartBase || r.MarkY <= r.Y || r.MarkY >= r.Y+r.Ht {
		t.Errorf("range bar %+v: want it above the axis with its mark inside", r)
	}
	if a.X >= b.X || b.X >= r.X {
		t.Error("bars out of order")
	}
}

func TestChartWithoutDataHasNoBars(t *testing.T) {
	for _, cols := range [][]column{nil, {{Label: "zero", Val: 0}}} {
		if c := newChart("t", "USD", cols); len(c.Bars) != 0 {
			t.Errorf("%v: %d bars", cols, len(c.Bars))
		}
	}
}
