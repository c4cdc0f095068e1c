package auction

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/attest"
)

// Job kinds. A batch job runs to its exit and leaves outputs; a service
// runs until it is cancelled or reaches its max duration and is reached
// over the network through the provider (`idlegrid job forward`).
const (
	KindBatch   = "batch"
	KindService = "service"
)

// Service limits and defaults.
const (
	MaxServicePorts        = 8
	MaxForwardPeers        = 16
	DefaultHealthInterval  = 5 * time.Second
	DefaultHealthThreshold = 3
	minHealthInterval      = 500 * time.Millisecond
	maxHealthInterval      = 10 * time.Minute
	maxHealthThreshold     = 100
	maxHealthPathLen       = 256
)

// Service is what a provider needs to serve a `kind: service` job.
type Service struct {
	// Ports are the container ports the workload listens on, sorted.
	Ports []uint16 `cbor:"ports"`
	// Health is the check the provider runs; a zero Port means none.
	Health HealthCheck `cbor:"health"`
	// HealthIntervalMs is the time between checks; HealthThreshold the
	// consecutive failures that make the lease unhealthy.
	HealthIntervalMs uint32 `cbor:"health_interval_ms"`
	HealthThreshold  uint32 `cbor:"health_threshold"`
	// ForwardPeers may open the tunnel besides the renter (peer IDs, sorted).
	ForwardPeers []string `cbor:"forward_peers,omitempty"`
	// ReauctionUnhealthy asks the renter to re-auction an unhealthy service.
	ReauctionUnhealthy bool `cbor:"reauction_unhealthy,omitempty"`
}

// HealthCheck is "http:PORT/PATH" (a GET answered 2xx or 3xx) or
// "tcp:PORT" (a connection accepted).
type HealthCheck struct {
	Proto string `cbor:"proto,omitempty"` // http or tcp
	Port  uint16 `cbor:"port,omitempty"`
	Path  string `cbor:"path,omitempty"` // http only, starts with /
}

// String is the spec spelling of the check.
func (h HealthCheck) String() string {
	if h.Port == 0 {
		return ""
	}
	return h.Proto + ":" + strconv.Itoa(int(h.Port)) + h.Path
}

// Interval is the time between health checks.
func (s *Service) Interval() time.Duration {
	return time.Duration(s.HealthIntervalMs) * time.Millisecond
}

// Allows reports whether p may open a tunnel to the service of a lease
// whose renter is renter.
func (s *Service) Allows(renter, p string) bool {
	return p == renter || slices.Contains(s.ForwardPeers, p)
}

// HasPort reports whether the spec exposes port.
func (s *Service) HasPort(port uint16) bool { return slices.Contains(s.Ports, port) }

// setService sets a service field from its text form; ok is false for a
// field that is not one of them.
func (s *JobSpec) setService(field, v string) (ok bool, err error) {
	switch field {
	case "kind":
		s.Kind = v
	case "health":
		s.Health = v
	case "health_interval":
		s.HealthInterval = v
	case "health_threshold":
		if !jobIsDigits(v, 1, 6) {
			return true, fmt.Errorf("takes a whole number, got %q", v)
		}
		s.HealthThreshold, _ = strconv.Atoi(v)
	case "reauction_unhealthy":
		switch v {
		case "true", "false":
			s.ReauctionUnhealthy = v == "true"
		default:
			return true, fmt.Errorf("takes true or false, got %q", v)
		}
	case "ports":
		s.Ports = nil
		if v == "" {
			return true, nil
		}
		for _, x := range strings.Split(v, ",") {
			x = strings.TrimSpace(x)
			if !jobIsDigits(x, 1, 5) {
				return true, fmt.Errorf("takes port numbers such as 8080, got %q", x)
			}
			n, _ := strconv.Atoi(x)
			s.Ports = append(s.Ports, n)
		}
	case "forward_peers":
		s.ForwardPeers = nil
		for _, x := range strings.Split(v, ",") {
			if x = strings.TrimSpace(x); x != "" {
				s.ForwardPeers = append(s.ForwardPeers, x)
			}
		}
	default:
		return false, nil
	}
	return true, nil
}

// resolveService validates the service fields into c.Service.
func (s *JobSpec) resolveService(sp *specProblems, c *jobSpecCanon) {
	kind := strings.ToLower(s.Kind)
	switch kind {
	case "", KindBatch:
		for _, f := range []struct {
			name string
			set  bool
		}{{"ports", len(s.Ports) > 0}, {"health", s.Health != ""}, {"health_interval", s.HealthInterval != ""},
			{"health_threshold", s.HealthThreshold != 0}, {"forward_peers", len(s.ForwardPeers) > 0},
			{"reauction_unhealthy", s.ReauctionUnhealthy}} {
			if f.set {
				sp.add(f.name, "is for kind: service")
			}
		}
		return
	case KindService:
	default:
		sp.add("kind", "%q is not batch or service", s.Kind)
		return
	}
	if c.Runtime != "" && c.Runtime != RuntimeDocker {
		sp.add("kind", "service jobs run on the docker runtime only")
	}
	svc := &Service{ReauctionUnhealthy: s.ReauctionUnhealthy}
	if len(s.Ports) == 0 {
		sp.add("ports", "missing: a service names the container ports it listens on, e.g. [8080]")
	}
	if len(s.Ports) > MaxServicePorts {
		sp.add("ports", "%d ports, at most %d", len(s.Ports), MaxServicePorts)
	}
	for i, p := range s.Ports {
		if p < 1 || p > 65535 {
			sp.add(fmt.Sprintf("ports[%d]", i), "%d is not a port (1..65535)", p)
			continue
		}
		if svc.HasPort(uint16(p)) {
			sp.add(fmt.Sprintf("ports[%d]", i), "%d repeated", p)
			continue
		}
		svc.Ports = append(svc.Ports, uint16(p))
	}
	slices.Sort(svc.Ports)
	if s.Health != "" {
		h, err := ParseHealthCheck(s.Health)
		switch {
		case err != nil:
			sp.add("health", "%v", err)
		case !svc.HasPort(h.Port):
			sp.add("health", "port %d is not one of ports", h.Port)
		default:
			svc.Health = h
		}
	}
	svc.HealthIntervalMs = uint32(DefaultHealthInterval.Milliseconds())
	if s.HealthInterval != "" {
		if ms, ok := jobResolveDuration(sp, "health_interval", s.HealthInterval, time.Millisecond, maxHealthInterval); ok {
			if time.Duration(ms)*time.Millisecond < minHealthInterval {
				sp.add("health_interval", "%q is under %s", s.HealthInterval, minHealthInterval)
			}
			svc.HealthIntervalMs = uint32(ms)
		}
	}
	svc.HealthThreshold = DefaultHealthThreshold
	switch t := s.HealthThreshold; {
	case t < 0 || t > maxHealthThreshold:
		sp.add("health_threshold", "%d out of range 1..%d", t, maxHealthThreshold)
	case t > 0:
		svc.HealthThreshold = uint32(t)
	}
	if len(s.ForwardPeers) > MaxForwardPeers {
		sp.add("forward_peers", "%d peers, at most %d", len(s.ForwardPeers), MaxForwardPeers)
	}
	for i, p := range s.ForwardPeers {
		id, err := peer.Decode(p)
		if err != nil {
			sp.add(fmt.Sprintf("forward_peers[%d]", i), "%q is not a peer ID", p)
			continue
		}
		if !slices.Contains(svc.ForwardPeers, id.String()) {
			svc.ForwardPeers = append(svc.ForwardPeers, id.String())
		}
	}
	slices.Sort(svc.ForwardPeers)
	c.Service = svc
}

// ParseHealthCheck parses "http:PORT/PATH" or "tcp:PORT".
func ParseHealthCheck(s string) (HealthCheck, error) {
	proto, rest, ok := strings.Cut(s, ":")
	if !ok || (proto != "http" && proto != "tcp") {
		return HealthCheck{}, fmt.Errorf("%q is not http:PORT/PATH or tcp:PORT", s)
	}
	port, path := rest, ""
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		port, path = rest[:i], rest[i:]
	}
	if !jobIsDigits(port, 1, 5) {
		return HealthCheck{}, fmt.Errorf("%q: want a port number after %q", s, proto+":")
	}
	n, _ := strconv.Atoi(port)
	if n < 1 || n > 65535 {
		return HealthCheck{}, fmt.Errorf("%q: %d is not a port (1..65535)", s, n)
	}
	switch {
	case proto == "tcp" && path != "":
		return HealthCheck{}, fmt.Errorf("%q: a tcp check has no path", s)
	case proto == "http" && path == "":
		path = "/"
	}
	if len(path) > maxHealthPathLen || !attest.Printable(path, maxHealthPathLen) || strings.ContainsAny(path, " \t\r\n") {
		return HealthCheck{}, errors.New("the health path must be printable ASCII without spaces, at most 256 bytes")
	}
	return HealthCheck{Proto: proto, Port: uint16(n), Path: path}, nil
}
