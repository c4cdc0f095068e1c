package docker

import (
	"testing"

	"github.com/docker/go-connections/nat"
)

// TestContainerConfigService: a service joins the internal network and
// records its ports without publishing any on the host.
func TestContainerConfigService(t *testing.T) {
	p := testPlan()
	p.spec.Ports = []uint16{8080, 9000}
	p.serviceNet = "idlegrid-svc-test"
	cfg, hc := containerConfig(p)
	if hc.NetworkMode != "idlegrid-svc-test" {
		t.Errorf("network mode %q, want the internal service network", hc.NetworkMode)
	}
	if len(hc.PortBindings) != 0 || hc.PublishAllPorts {
		t.Errorf("a service publishes ports on the host: %v", hc.PortBindings)
	}
	for _, port := range []nat.Port{"8080/tcp", "9000/tcp"} {
		if _, ok := cfg.ExposedPorts[port]; !ok {
			t.Errorf("port %s not recorded", port)
		}
	}
	if !hc.ReadonlyRootfs || len(hc.CapDrop) == 0 {
		t.Error("a service loses the batch hardening")
	}
	batch := testPlan()
	if _, hc := containerConfig(batch); hc.NetworkMode != "none" {
		t.Errorf("batch network mode %q", hc.NetworkMode)
	}
}
