package gpu

import "testing"

func TestModelSlug(t *testing.T) {
	tests := []struct {
		name string
		mib  uint64
		want string
	}{
		{"NVIDIA H100 80GB HBM3", 81559, "h100-80gb"},
		{"NVIDIA H100 NVL", 95830, "h100-nvl-94gb"},
		{"NVIDIA H200", 143771, "h200-141gb"},
		{"NVIDIA A100-SXM4-80GB", 81920, "a100-80gb"},
		{"NVIDIA A100-PCIE-40GB", 40960, "a100-40gb"},
		{"NVIDIA L40S", 46068, "l40s-48gb"},
		{"NVIDIA GeForce RTX 4090", 24564, "rtx-4090-24gb"},
		{"NVIDIA A10", 23028, "a10-24gb"},
		{"Tesla T4", 15360, "t4-16gb"},
		{"", 8192, "gpu-8gb"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			if got := ModelSlug(tc.name, tc.mib); got != tc.want {
				t.Errorf("ModelSlug(%q, %d) = %q, want %q", tc.name, tc.mib, got, tc.want)
			}
		})
	}
	for _, p := range KnownProfiles() {
		if s := ModelSlug(p.Name, p.MemoryMiB); s == "" {
			t.Errorf("profile %s has no slug", p.Key)
		}
	}
}
