package nodetest

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// CounterSum sums the counter name over reg's series whose label is value
// (other labels summed over); label "" sums every series.
func CounterSum(tb testing.TB, reg prometheus.Gatherer, name, label, value string) float64 {
	tb.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if label == "" {
				sum += m.GetCounter().GetValue()
				continue
			}
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					sum += m.GetCounter().GetValue()
				}
			}
		}
	}
	return sum
}
