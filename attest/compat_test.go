package attest

import (
	"errors"
	"testing"
)

// Records of another protocol version (a newer "v", or fields this build
// does not know, under a good signature) are told apart from malformed
// ones: validators ignore the former and charge the latter.
func TestFromOtherVersion(t *testing.T) {
	custom := func(t *testing.T, payload any) []byte {
		return sealCustom(t, testKind.Domain, string(testKind.PayloadType), mustCBOR(t, payload))
	}
	for _, c := range []struct {
		name  string
		raw   func(t *testing.T) []byte
		other bool
	}{
		{"newer_version", func(t *testing.T) []byte { return custom(t, map[string]any{"v": 2, "name": "x", "future": true}) }, true},
		{"much_newer_version", func(t *testing.T) []byte { return custom(t, map[string]any{"v": 900}) }, true},
		{"unknown_field", func(t *testing.T) []byte { return custom(t, map[string]any{"v": 1, "name": "x", "extra": 1}) }, true},
		{"missing_version", func(t *testing.T) []byte { return custom(t, map[string]any{"name": "x"}) }, false},
		{"wrong_field_type", func(t *testing.T) []byte { return custom(t, map[string]any{"v": 1, "name": 5}) }, false},
		{"newer_version_bad_signature", func(t *testing.T) []byte {
			raw := custom(t, map[string]any{"v": 2, "name": "x"})
			raw[len(raw)-1] ^= 1
			return raw
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := Open[testRec](c.raw(t), 0)
			if err == nil {
				t.Fatal("Open accepted the record")
			}
			if got := FromOtherVersion(err); got != c.other {
				t.Fatalf("FromOtherVersion(%v) = %v, want %v", err, got, c.other)
			}
			if c.other && !errors.Is(err, errors.ErrUnsupported) {
				t.Fatalf("%v does not wrap errors.ErrUnsupported", err)
			}
		})
	}
	if _, _, err := Open[testRec](mustSeal(t, testRec{V: 1, Name: "gpu"}), 0); err != nil {
		t.Fatalf("a current record: %v", err)
	}
	var rec testRec
	if err := Unmarshal(mustCBOR(t, map[string]any{"v": 1, "future": "x"}), &rec); !FromOtherVersion(err) || !errors.Is(err, ErrMalformed) {
		t.Fatalf("Unmarshal with an unknown field: %v, want ErrMalformed and ErrOtherVersion", err)
	}
}
