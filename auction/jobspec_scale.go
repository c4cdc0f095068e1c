package auction

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Scaling bounds of a replicated service (issue 30): the renter runs
// between min_replicas and max_replicas replicas, starting at replicas,
// and moves one step at a time by the requests in flight per replica at
// its endpoint, averaged over scale_window (ScaleReplicas). Like
// replicas, these are the renter's business and not in the canonical
// spec.

// Defaults of the scaling rule.
const (
	DefaultScaleInFlight = 4
	DefaultScaleWindow   = 30 * time.Second
	minScaleWindow       = time.Second
	maxScaleWindow       = time.Hour
	maxScaleInFlight     = 10000
	maxUSDPerMTok        = 1e6
)

// ReplicaBounds are the fewest and most replicas the renter may run;
// both are ReplicaCount when the spec sets no bound.
func (s *JobSpec) ReplicaBounds() (lo, hi int) {
	lo, hi = s.ReplicaCount(), s.ReplicaCount()
	if s.ReplicasMin > 0 {
		lo = s.ReplicasMin
	}
	if s.ReplicasMax > 0 {
		hi = s.ReplicasMax
	}
	return lo, hi
}

// ScaleRule is the target of requests in flight per replica and the
// window they are averaged over.
func (s *JobSpec) ScaleRule() (inFlight int, window time.Duration) {
	inFlight, window = DefaultScaleInFlight, DefaultScaleWindow
	if s.ScaleInFlight > 0 {
		inFlight = s.ScaleInFlight
	}
	if d, err := time.ParseDuration(s.ScaleWindow); err == nil && s.ScaleWindow != "" {
		window = d
	}
	return inFlight, window
}

// ScaleReplicas is the replica count to run next: one more when the
// requests in flight per replica, averaged over the window, exceeded the
// target; one fewer when they stayed under a quarter of it (the gap keeps
// a count from flapping); never outside lo..hi. Over the renter's
// max_usd_per_mtok (overCap) the service never grows, and it shrinks by
// one unless it is loaded past its target: idle replicas are what make
// tokens dear.
func ScaleReplicas(cur, lo, hi int, avgInFlight float64, target int, overCap bool) int {
	next := cur
	switch {
	case overCap && avgInFlight > float64(target):
	case overCap:
		next = cur - 1
	case avgInFlight > float64(target):
		next = cur + 1
	case avgInFlight < float64(target)/4:
		next = cur - 1
	}
	return max(lo, min(hi, next))
}

// MaxUSDPerMTokCap is the renter's cap on a service's $ per million
// tokens; 0: none.
func (s *JobSpec) MaxUSDPerMTokCap() float64 { return s.MaxUSDPerMTok }

// setScale sets a scaling field; false for a field that is not one.
func (s *JobSpec) setScale(field, v string) (bool, error) {
	switch field {
	case "min_replicas", "max_replicas":
		if !jobIsDigits(v, 1, 3) {
			return true, fmt.Errorf("takes a whole number from 1 to %d, got %q", MaxReplicas, v)
		}
		n, _ := strconv.Atoi(v)
		if field == "min_replicas" {
			s.ReplicasMin = n
		} else {
			s.ReplicasMax = n
		}
	case "scale_in_flight":
		if !jobIsDigits(v, 1, 5) {
			return true, fmt.Errorf("takes a whole number from 1 to %d, got %q", maxScaleInFlight, v)
		}
		s.ScaleInFlight, _ = strconv.Atoi(v)
	case "scale_window":
		s.ScaleWindow = v
	case "max_usd_per_mtok":
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 || f > maxUSDPerMTok {
			return true, fmt.Errorf("takes a price in USD per million tokens, above 0 and at most %g, got %q", float64(maxUSDPerMTok), v)
		}
		s.MaxUSDPerMTok = f
	default:
		return false, nil
	}
	return true, nil
}

// resolveScale checks the bounds: only for a service, and
// 1 <= min_replicas <= replicas <= max_replicas <= MaxReplicas.
func (s *JobSpec) resolveScale(sp *specProblems) {
	if s.ReplicasMin == 0 && s.ReplicasMax == 0 && s.ScaleInFlight == 0 && s.ScaleWindow == "" && s.MaxUSDPerMTok == 0 {
		return
	}
	if strings.ToLower(s.Kind) != KindService {
		sp.add("max_replicas", "scaling bounds are for a service (kind: service)")
		return
	}
	lo, hi := s.ReplicaBounds()
	switch {
	case lo < 1 || hi > MaxReplicas:
		sp.add("max_replicas", "bounds %d..%d out of range 1..%d", lo, hi, MaxReplicas)
	case lo > s.ReplicaCount():
		sp.add("min_replicas", "%d is more than replicas (%d), the count a service starts with", lo, s.ReplicaCount())
	case hi < s.ReplicaCount():
		sp.add("max_replicas", "%d is less than replicas (%d), the count a service starts with", hi, s.ReplicaCount())
	}
	if s.ScaleInFlight < 0 || s.ScaleInFlight > maxScaleInFlight {
		sp.add("scale_in_flight", "%d out of range 1..%d", s.ScaleInFlight, maxScaleInFlight)
	}
	if s.ScaleWindow != "" {
		d, err := time.ParseDuration(s.ScaleWindow)
		if err != nil || d < minScaleWindow || d > maxScaleWindow {
			sp.add("scale_window", "%q: want a duration from %s to %s", s.ScaleWindow, minScaleWindow, "1h")
		}
	}
}
