package provider

import (
	"fmt"
	"testing"

	"github.com/idlegrid/idlegrid/node/gpu"
)

// The advertiser's slug memo answers as gpu.ModelSlug does, and holds at
// most maxDeviceSlugs devices however many names it is asked.
func TestDeviceSlugsMemoizeModelSlug(t *testing.T) {
	var s deviceSlugs
	for i := range 3 * maxDeviceSlugs {
		name, mem := fmt.Sprintf("NVIDIA H%d PCIe", 100+i%(2*maxDeviceSlugs)), uint64(81559)
		if got, want := s.of(name, mem), gpu.ModelSlug(name, mem); got != want {
			t.Fatalf("%q: %q, gpu.ModelSlug %q", name, got, want)
		}
		if len(s) > maxDeviceSlugs {
			t.Fatalf("%d slugs kept, at most %d", len(s), maxDeviceSlugs)
		}
	}
	if got := s.of("NVIDIA A10", 24564); got != "a10-24gb" {
		t.Errorf("A10: %q", got)
	}
}
