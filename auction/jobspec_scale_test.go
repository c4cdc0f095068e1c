package auction

import (
	"strings"
	"testing"
	"time"
)

const specScaled = "kind: service\nimage: x@sha256:3f1a9c0b3f1a9c0b3f1a9c0b3f1a9c0b3f1a9c0b3f1a9c0b3f1a9c0b3f1a9c0b\nports: [8080]\nmax_price: 1\nduration: 1h\n"

func TestScaleFields(t *testing.T) {
	s, err := ParseJobSpec([]byte(specScaled + "replicas: 2\nmin_replicas: 1\nmax_replicas: 4\nscale_in_flight: 8\nscale_window: 5s\nmax_usd_per_mtok: 0.5\n"))
	if err != nil {
		t.Fatal(err)
	}
	if lo, hi := s.ReplicaBounds(); lo != 1 || hi != 4 {
		t.Errorf("bounds %d..%d", lo, hi)
	}
	if s.MaxUSDPerMTokCap() != 0.5 {
		t.Errorf("cap %v", s.MaxUSDPerMTokCap())
	}
	if n, w := s.ScaleRule(); n != 8 || w != 5*time.Second {
		t.Errorf("rule %d per replica over %s", n, w)
	}
	plain, err := ParseJobSpec([]byte(specScaled + "replicas: 3\n"))
	if err != nil {
		t.Fatal(err)
	}
	if lo, hi := plain.ReplicaBounds(); lo != 3 || hi != 3 {
		t.Errorf("unset bounds %d..%d, want 3..3", lo, hi)
	}
	for _, bad := range []struct{ extra, want string }{
		{"replicas: 2\nmax_replicas: 1\n", "max_replicas"},
		{"replicas: 2\nmin_replicas: 3\n", "min_replicas"},
		{"max_replicas: 9\n", "max_replicas"},
		{"max_replicas: 2\nscale_window: 10ms\n", "scale_window"},
		{"max_replicas: 2\nmax_usd_per_mtok: -1\n", "max_usd_per_mtok"},
	} {
		if _, err := ParseJobSpec([]byte(specScaled + bad.extra)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: %v, want a problem with %s", bad.extra, err, bad.want)
		}
	}
	batch := strings.Replace(specScaled, "kind: service\n", "", 1)
	batch = strings.Replace(batch, "ports: [8080]\n", "", 1)
	if _, err := ParseJobSpec([]byte(batch + "max_replicas: 2\n")); err == nil {
		t.Error("scaling bounds on a batch job")
	}
}

func TestScaleReplicas(t *testing.T) {
	for _, c := range []struct {
		cur, lo, hi int
		avg         float64
		target      int
		overCap     bool
		want        int
	}{
		{2, 1, 4, 5, 4, false, 3},   // over the target: one more
		{4, 1, 4, 50, 4, false, 4},  // at the ceiling
		{2, 1, 4, 0.5, 4, false, 1}, // under a quarter: one fewer
		{1, 1, 4, 0, 4, false, 1},   // at the floor
		{2, 1, 4, 2, 4, false, 2},   // in between: stay
		{2, 1, 4, 5, 4, true, 2},    // over the target but over the cap: stay
		{3, 1, 4, 2, 4, true, 2},    // over the cap and not overloaded: one fewer
		{1, 1, 4, 0, 4, true, 1},    // over the cap at the floor
	} {
		if got := ScaleReplicas(c.cur, c.lo, c.hi, c.avg, c.target, c.overCap); got != c.want {
			t.Errorf("%+v: %d", c, got)
		}
	}
}
