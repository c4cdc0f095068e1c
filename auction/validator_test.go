package auction

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/attest"
	record "github.com/libp2p/go-libp2p-record"
)

// The DHT takes this interface; asserting it here keeps the package itself
// free of the go-libp2p-record import.
var _ record.Validator = CapacityValidator{}

func TestCapacityKey(t *testing.T) {
	_, id := testKey(t, 1)
	key := CapacityKey(id)
	if want := "/idlegrid-cap/" + id.String(); key != want {
		t.Fatalf("CapacityKey = %q, want %q", key, want)
	}
	ns, _, err := record.SplitKey(key)
	if err != nil || ns != CapacityNamespace {
		t.Fatalf("SplitKey(%q) = %q, %v", key, ns, err)
	}
	got, err := ParseCapacityKey(key)
	if err != nil || got != id {
		t.Fatalf("ParseCapacityKey = %s, %v", got, err)
	}
	for _, bad := range []string{"/pk/" + id.String(), "/idlegrid-cap/", "/idlegrid-cap/xyz", "idlegrid-cap/" + id.String()} {
		if _, err := ParseCapacityKey(bad); !errors.Is(err, ErrBadKey) {
			t.Errorf("ParseCapacityKey(%q) = %v, want ErrBadKey", bad, err)
		}
	}
}

func TestCapacityValidatorValidate(t *testing.T) {
	key1, id1 := testKey(t, 1)
	key2, id2 := testKey(t, 2)
	good := mustSealCapacity(t, fixtureCapacity(t, 1), key1)
	forged, err := attest.Seal(fixtureCapacity(t, 1), key2) // peer 2 claims to be peer 1
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		key     string
		value   []byte
		now     time.Time
		wantErr error
		wantMsg string
	}{
		{name: "valid", key: CapacityKey(id1), value: good, now: fixedNow},
		{name: "valid_within_skew", key: CapacityKey(id1), value: good, now: fixedNow.Add(-4 * time.Minute)},
		{name: "stored_under_other_peer", key: CapacityKey(id2), value: good, now: fixedNow,
			wantErr: ErrNotOwner, wantMsg: "key belongs to " + id2.String()},
		{name: "forged_signer", key: CapacityKey(id1), value: forged, now: fixedNow, wantErr: ErrNotOwner},
		{name: "expired", key: CapacityKey(id1), value: good, now: fixedNow.Add(30 * time.Minute),
			wantErr: ErrExpired},
		{name: "from_the_future", key: CapacityKey(id1), value: good, now: fixedNow.Add(-6 * time.Minute),
			wantErr: ErrNotYetValid},
		{name: "malformed", key: CapacityKey(id1), value: []byte("junk"), now: fixedNow, wantErr: attest.ErrMalformed},
		{name: "oversize", key: CapacityKey(id1), value: make([]byte, MaxCapacitySize+1), now: fixedNow,
			wantErr: attest.ErrTooLarge},
		{name: "bad_key", key: "/idlegrid-cap/nope", value: good, now: fixedNow, wantErr: ErrBadKey},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := NewCapacityValidator(func() time.Time { return tc.now })
			err := v.Validate(tc.key, tc.value)
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Validate = %v, want %v", err, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("Validate = %q, want it to contain %q", err, tc.wantMsg)
			}
		})
	}
}

func TestCapacityValidatorWithoutClock(t *testing.T) {
	key, id := testKey(t, 1)
	err := CapacityValidator{}.Validate(CapacityKey(id), mustSealCapacity(t, fixtureCapacity(t, 1), key))
	if err == nil || !strings.Contains(err.Error(), "no clock") {
		t.Fatalf("Validate without clock = %v", err)
	}
}

func TestCapacityValidatorSelect(t *testing.T) {
	key, id := testKey(t, 1)
	seal := func(seq uint64, issuedOffset time.Duration, mutate func(*Capacity)) []byte {
		c := fixtureCapacity(t, 1)
		c.Seq = seq
		c.IssuedAtMs = fixedNow.Add(issuedOffset).UnixMilli()
		if mutate != nil {
			mutate(c)
		}
		return mustSealCapacity(t, c, key)
	}
	seq5 := seal(5, 0, nil)
	seq7 := seal(7, 0, nil)
	seq7later := seal(7, time.Second, nil)
	seq7a := seal(7, 0, func(c *Capacity) { c.Version = "a" })
	seq7b := seal(7, 0, func(c *Capacity) { c.Version = "b" })
	seq9expired := seal(9, -time.Hour, func(c *Capacity) { c.ExpiresAtMs = fixedNow.Add(-time.Minute).UnixMilli() })
	greater, lesser := seq7a, seq7b
	if string(seq7b) > string(seq7a) {
		greater, lesser = seq7b, seq7a
	}
	cases := []struct {
		name   string
		values [][]byte
		want   int
	}{
		{"single", [][]byte{seq5}, 0},
		{"higher_seq_wins", [][]byte{seq5, seq7}, 1},
		{"higher_seq_wins_first", [][]byte{seq7, seq5}, 0},
		{"lower_seq_never_replaces", [][]byte{seq7, seq5, seq5}, 0},
		{"tie_later_issue_wins", [][]byte{seq7, seq7later}, 1},
		{"tie_greater_bytes_wins", [][]byte{lesser, greater}, 1},
		{"tie_greater_bytes_wins_reversed", [][]byte{greater, lesser}, 0},
		{"expired_higher_seq_skipped", [][]byte{seq9expired, seq5}, 1},
		{"garbage_skipped", [][]byte{[]byte("x"), seq5}, 1},
	}
	v := NewCapacityValidator(func() time.Time { return fixedNow })
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := v.Select(CapacityKey(id), tc.values)
			if err != nil {
				t.Fatalf("Select: %v", err)
			}
			if got != tc.want {
				t.Errorf("Select = %d, want %d", got, tc.want)
			}
		})
	}
	if _, err := v.Select(CapacityKey(id), [][]byte{[]byte("x"), seq9expired}); err == nil {
		t.Error("Select over only invalid values succeeded")
	}
	if _, err := v.Select(CapacityKey(id), nil); err == nil {
		t.Error("Select over no values succeeded")
	}
}

// TestNamespacedValidator runs the validator the way the DHT does.
func TestNamespacedValidator(t *testing.T) {
	key, id := testKey(t, 1)
	nv := record.NamespacedValidator{CapacityNamespace: NewCapacityValidator(func() time.Time { return fixedNow })}
	raw := mustSealCapacity(t, fixtureCapacity(t, 1), key)
	if err := nv.Validate(CapacityKey(id), raw); err != nil {
		t.Fatalf("NamespacedValidator.Validate: %v", err)
	}
	if i, err := nv.Select(CapacityKey(id), [][]byte{raw}); err != nil || i != 0 {
		t.Fatalf("NamespacedValidator.Select = %d, %v", i, err)
	}
}
