package cli

import (
	"testing"

	"github.com/idlegrid/idlegrid/node/api"
)

// TestMatchForwards: --stop takes what the start command took.
func TestMatchForwards(t *testing.T) {
	fs := []api.Forward{
		{Listen: "127.0.0.1:9000", Port: 8080},
		{Listen: "127.0.0.1:41234", Port: 9090}, // started as 127.0.0.1:0 --remote-port 9090
	}
	for _, tc := range []struct {
		name, listen string
		remote       uint16
		want         []uint16
	}{
		{"the local address", "127.0.0.1:9000", 0, []uint16{8080}},
		{"the local port alone", "127.0.0.1:9000", 0, []uint16{8080}},
		{"the container port", "127.0.0.1:8080", 0, []uint16{8080}},
		{"--remote-port", "127.0.0.1:1", 9090, []uint16{9090}},
		{"port 0 on one host matches both", "127.0.0.1:0", 0, []uint16{8080, 9090}},
		{"another host", "0.0.0.0:9000", 0, nil},
		{"nothing", "127.0.0.1:7", 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []uint16
			for _, f := range matchForwards(fs, tc.listen, tc.remote) {
				got = append(got, f.Port)
			}
			if len(got) != len(tc.want) || (len(got) > 0 && got[0] != tc.want[0]) {
				t.Errorf("matchForwards(%q, %d) = %v, want %v", tc.listen, tc.remote, got, tc.want)
			}
		})
	}
}

func TestParseForwardAddr(t *testing.T) {
	cases := []struct {
		in, listen string
		port       uint16
		ok         bool
	}{
		{"8080", "127.0.0.1:8080", 8080, true},
		{"0.0.0.0:9000", "0.0.0.0:9000", 9000, true},
		{"[::1]:80", "[::1]:80", 80, true},
		{"localhost:0", "localhost:0", 0, true},
		{"http", "", 0, false},
		{"127.0.0.1:70000", "", 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			listen, port, err := parseForwardAddr(tc.in)
			if (err == nil) != tc.ok || listen != tc.listen || port != tc.port {
				t.Errorf("got %q %d %v, want %q %d ok=%v", listen, port, err, tc.listen, tc.port, tc.ok)
			}
		})
	}
}
