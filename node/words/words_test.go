package words

import (
	"testing"
	"time"
)

func TestWords(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{OneOf([]string{"provider", "renter", "bootstrap"}), "provider, renter or bootstrap"},
		{OneOf([]string{"wasm"}), "wasm"},
		{All([]string{"a", "b"}), "a and b"},
		{OneOf([]string(nil)), "none"},
		{Duration(24 * time.Hour), "24h"},
		{Duration(90 * time.Minute), "1h30m"},
		{Duration(90 * time.Second), "1m30s"},
		{Duration(2 * time.Minute), "2m"},
		{Duration(1500 * time.Millisecond), "1.5s"},
		{Duration(0), "0s"},
		{Plural(1, "bid"), "1 bid"},
		{Plural(0, "bid"), "0 bids"},
		{Bytes(812), "812 bytes"},
		{Bytes(1536 << 10), "1.5 MiB"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
