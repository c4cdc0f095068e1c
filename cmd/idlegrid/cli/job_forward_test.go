package cli

import "testing"

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
