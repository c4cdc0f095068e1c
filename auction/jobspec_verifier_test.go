package auction

import (
	"errors"
	"strings"
	"testing"
)

func TestVerifierIsCheckedAndLeavesTheCIDAlone(t *testing.T) {
	const module = "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy"
	base := func() *JobSpec {
		return &JobSpec{Image: "reg/img@sha256:" + strings.Repeat("a", 64), MaxPrice: 1, Duration: "1m", Replicas: 2}
	}
	plain, err := base().CID()
	if err != nil {
		t.Fatal(err)
	}
	s := base()
	if err := s.Set("verifier", module); err != nil {
		t.Fatal(err)
	}
	judged, err := s.CID()
	if err != nil {
		t.Fatal(err)
	}
	if judged != plain {
		t.Fatalf("verifier changed the spec CID: %s, want %s", judged, plain)
	}
	for _, tc := range []struct {
		name string
		edit func(*JobSpec)
		want string
	}{
		{"not a CID", func(s *JobSpec) { s.Verifier = "numcmp.wasm" }, "verifier"},
		{"one replica", func(s *JobSpec) { s.Replicas = 1 }, "set replicas: 2 or more"},
		{"replicas unset", func(s *JobSpec) { s.Replicas = 0 }, "set replicas: 2 or more"},
		{"service", func(s *JobSpec) { s.Kind, s.Ports = KindService, []int{8080} }, "a service's replicas are not compared"},
	} {
		s := base()
		s.Verifier = module
		tc.edit(s)
		err := s.Validate()
		if !errors.Is(err, ErrInvalidJobSpec) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate = %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
	y, err := ParseJobSpec([]byte("image: reg/img@sha256:" + strings.Repeat("a", 64) + "\nmax_price: 1\nduration: 1m\nreplicas: 3\nverifier: " + module + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if y.Verifier != module || y.VerifierModule() != module {
		t.Fatalf("parsed verifier %q (module %q), want %q", y.Verifier, y.VerifierModule(), module)
	}
	if m := base().VerifierModule(); m != "" {
		t.Fatalf("VerifierModule of a spec without one = %q", m)
	}
}

// A verifier image must be pinned by digest; the spec then names no
// verifier module, and the image is what VerifierImage returns.
func TestVerifierImage(t *testing.T) {
	image := "reg/numcmp@sha256:" + strings.Repeat("b", 64)
	y, err := ParseJobSpec([]byte("image: reg/img@sha256:" + strings.Repeat("a", 64) + "\nmax_price: 1\nduration: 1m\nreplicas: 2\nverifier: " + image + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if y.VerifierImage() != image || y.VerifierModule() != "" {
		t.Fatalf("image %q, module %q; want the image only", y.VerifierImage(), y.VerifierModule())
	}
	_, err = ParseJobSpec([]byte("image: reg/img@sha256:" + strings.Repeat("a", 64) + "\nmax_price: 1\nduration: 1m\nreplicas: 2\nverifier: reg/numcmp:latest\n"))
	if !errors.Is(err, ErrInvalidJobSpec) || !strings.Contains(err.Error(), "not pinned by digest") {
		t.Fatalf("a verifier image by tag: %v, want refused as not pinned", err)
	}
}
