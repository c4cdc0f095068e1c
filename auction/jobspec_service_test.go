package auction

import (
	"reflect"
	"strings"
	"testing"
)

const specService = "kind: service\nports: [8080, 9000]\nhealth: http:8080/healthz\n"

func TestJobSpecServiceValid(t *testing.T) {
	_, p := testKey(t, msgRenterSeed)
	cases := []struct {
		name string
		yaml string
		want Service
	}{
		{"defaults", "kind: service\nports: [8080]\n", Service{Ports: []uint16{8080},
			HealthIntervalMs: 5000, HealthThreshold: DefaultHealthThreshold}},
		{"http_check", specService + "health_interval: 2s\nhealth_threshold: 4\nreauction_unhealthy: true\n",
			Service{Ports: []uint16{8080, 9000}, Health: HealthCheck{Proto: "http", Port: 8080, Path: "/healthz"},
				HealthIntervalMs: 2000, HealthThreshold: 4, ReauctionUnhealthy: true}},
		{"tcp_check_sorted_ports", "kind: service\nports: 9000,22\nhealth: tcp:22\n",
			Service{Ports: []uint16{22, 9000}, Health: HealthCheck{Proto: "tcp", Port: 22},
				HealthIntervalMs: 5000, HealthThreshold: 3}},
		{"http_root", "kind: service\nports: [80]\nhealth: http:80\nforward_peers: [" + p.String() + "]\n",
			Service{Ports: []uint16{80}, Health: HealthCheck{Proto: "http", Port: 80, Path: "/"},
				HealthIntervalMs: 5000, HealthThreshold: 3, ForwardPeers: []string{p.String()}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := mustParseSpec(t, specBase+tc.yaml)
			w, err := s.Workload()
			if err != nil {
				t.Fatal(err)
			}
			if w.Service == nil || !reflect.DeepEqual(*w.Service, tc.want) {
				t.Fatalf("service %+v, want %+v", w.Service, tc.want)
			}
			if !w.Service.Allows("renter", "renter") || w.Service.Allows("renter", "other") {
				t.Error("Allows: the renter only (and forward_peers)")
			}
		})
	}
}

func TestJobSpecServiceErrors(t *testing.T) {
	cases := []struct {
		name, yaml, want string
	}{
		{"ports_on_batch", "ports: [80]\n", "ports: is for kind: service"},
		{"unknown_kind", "kind: daemon\n", `kind: "daemon" is not batch or service`},
		{"no_ports", "kind: service\n", "ports: missing"},
		{"bad_port", "kind: service\nports: [0]\n", "0 is not a port"},
		{"big_port", "kind: service\nports: [70000]\n", "70000 is not a port"},
		{"repeated_port", "kind: service\nports: [80, 80]\n", "80 repeated"},
		{"port_text", "kind: service\nports: [http]\n", "takes port numbers"},
		{"health_proto", "kind: service\nports: [80]\nhealth: udp:80\n", "is not http:PORT/PATH or tcp:PORT"},
		{"health_port_unlisted", "kind: service\nports: [80]\nhealth: tcp:81\n", "port 81 is not one of ports"},
		{"health_tcp_path", "kind: service\nports: [80]\nhealth: tcp:80/x\n", "a tcp check has no path"},
		{"interval_short", "kind: service\nports: [80]\nhealth_interval: 10ms\n", "is under 500ms"},
		{"threshold_big", "kind: service\nports: [80]\nhealth_threshold: 1000\n", "out of range"},
		{"forward_peer", "kind: service\nports: [80]\nforward_peers: [nope]\n", `"nope" is not a peer ID`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseJobSpec([]byte(specBase + tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
	wasm := &JobSpec{Module: "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy", Kind: "service", Ports: []int{80}}
	if err := wasm.Validate(); err == nil || !strings.Contains(err.Error(), "docker runtime only") {
		t.Errorf("wasm service: %v", err)
	}
}

// TestJobSpecBatchCIDUnchanged: the service field is omitted for batch
// jobs, so adding it leaves existing CIDs as they were (the goldens pin
// them), and a service spec has a CID of its own.
func TestJobSpecServiceCID(t *testing.T) {
	a, b := mustParseSpec(t, specBase), mustParseSpec(t, specBase+specService)
	if specCID(t, a) == specCID(t, b) {
		t.Error("service and batch spec share a CID")
	}
	set := &JobSpec{}
	for _, kv := range [][2]string{{"kind", "service"}, {"ports", "8080,9000"}, {"health", "http:8080/healthz"}} {
		if err := set.Set(kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	set.Image, set.MaxPrice, set.Duration = specImage, 1.80, "2h"
	if specCID(t, set) != specCID(t, b) {
		t.Error("flags and YAML give different CIDs")
	}
}
