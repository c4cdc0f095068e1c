package auction

import (
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/attest/golden"
)

// The RFQ golden of before want_bids decodes, unchanged, as an RFQ that
// wants the default number of bids: the field is absent when zero.
func TestRFQWantBidsOldGolden(t *testing.T) {
	want, err := os.ReadFile(filepath.Join("testdata", "rfq.golden"))
	if err != nil {
		t.Fatal(err)
	}
	payload, err := hex.DecodeString(strings.TrimSpace(string(want)))
	if err != nil {
		t.Fatal(err)
	}
	var r RFQ
	if err := attest.Unmarshal(payload, &r); err != nil {
		t.Fatal(err)
	}
	if r.WantBids != 0 || r.WantedBids() != DefaultWantBids {
		t.Errorf("old RFQ wants %d (field %d), want default %d", r.WantedBids(), r.WantBids, DefaultWantBids)
	}
	if strings.Contains(string(payload), "want_bids") {
		t.Error("an RFQ without want_bids encodes the key")
	}
}

// TestRFQWantBidsGolden pins the encoding of an RFQ that sets want_bids.
// Regenerate with: go test ./auction -run TestRFQWantBidsGolden -update
func TestRFQWantBidsGolden(t *testing.T) {
	r := msgRFQ(t)
	r.WantBids = 24
	payload, err := attest.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	got := hex.EncodeToString(payload) + "\n"
	golden.Check(t, filepath.Join("testdata", "rfq-want-bids.golden"), got)
	key, _ := testKey(t, msgRenterSeed)
	raw, err := SealRFQ(r, key)
	if err != nil {
		t.Fatal(err)
	}
	back, _, err := OpenRFQ(raw)
	if err != nil {
		t.Fatal(err)
	}
	if back.WantBids != 24 || back.WantedBids() != 24 {
		t.Errorf("round trip wants %d", back.WantedBids())
	}
}

func TestRFQWantBidsValidate(t *testing.T) {
	for _, tc := range []struct {
		want uint32
		ok   bool
	}{{0, true}, {1, true}, {MaxWantBids, true}, {MaxWantBids + 1, false}, {1 << 31, false}} {
		r := msgRFQ(t)
		r.WantBids = tc.want
		err := r.Validate()
		if tc.ok != (err == nil) {
			t.Errorf("want_bids %d: err = %v", tc.want, err)
		}
		if err != nil && (!errors.Is(err, ErrInvalidMessage) || !strings.Contains(err.Error(), "want_bids")) {
			t.Errorf("want_bids %d: error %v does not name the field", tc.want, err)
		}
	}
}

func TestRFQTimeliness(t *testing.T) {
	const skew, ttl = time.Minute, 2 * time.Minute
	r := msgRFQ(t) // issued at fixedNow, expires 10.5 s later
	exp := time.UnixMilli(r.ExpiresAtMs)
	for _, tc := range []struct {
		name string
		now  time.Time
		want Timeliness
	}{
		{"at issue", fixedNow, RFQTimely},
		{"issued within skew ahead", fixedNow.Add(-skew), RFQTimely},
		{"issued beyond skew ahead", fixedNow.Add(-skew - time.Millisecond), RFQFuture},
		{"just before expiry", exp.Add(-time.Millisecond), RFQTimely},
		{"at expiry", exp, RFQExpired},
		{"expired, a relay may still hold it", exp.Add(ttl + skew - time.Millisecond), RFQExpired},
		{"expired beyond any relay", exp.Add(ttl + skew), RFQStale},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := r.Timeliness(tc.now, skew, ttl); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
	if got := r.Timeliness(exp, -time.Hour, -time.Hour); got != RFQStale {
		t.Errorf("negative windows: got %s, want stale", got)
	}
}
