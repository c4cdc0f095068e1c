package auction

import (
	"encoding/hex"
	"errors"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/attest/golden"
)

// fixtureDigest summarizes fixtureCapacity(seed) at fixedNow (a Monday,
// 12:00 UTC: the 1.2x window).
func fixtureDigest(t testing.TB, seed byte) *Digest {
	t.Helper()
	d, err := NewDigest(DigestInput{Capacity: fixtureCapacity(t, seed), Seq: 3, Now: fixedNow, TTL: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestNewDigest(t *testing.T) {
	c := fixtureCapacity(t, 2)
	c.GPUs = append(c.GPUs,
		GPU{Index: 2, UUID: "GPU-3", Model: "a100-40gb", VRAMMiB: 40960, ComputeCap: "8.0", Free: true},
		GPU{Index: 3, UUID: "GPU-4", Model: "h100-80gb", VRAMMiB: 81000, ComputeCap: "9.0", Free: true})
	d, err := NewDigest(DigestInput{Capacity: c, Held: map[string]bool{"GPU-4": true}, Seq: 9, Now: fixedNow, TTL: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	want := []DigestModel{
		{Model: "h100-80gb", VRAMMiB: 81000, ComputeCap: "9.0", Total: 3, Free: 1, Held: 1},
		{Model: "a100-40gb", VRAMMiB: 40960, ComputeCap: "8.0", Total: 1, Free: 1},
	}
	if !reflect.DeepEqual(d.Models, want) {
		t.Errorf("models %+v, want %+v", d.Models, want)
	}
	if d.Floor != (FloorPrice{Gold: 3_840_000, Silver: 2_880_000, Bronze: 1_320_000}) {
		t.Errorf("floor %+v, want the record's floor at the 1.2x window", d.Floor)
	}
	if d.Seq != 9 || d.CapSeq != c.Seq || d.ExpiresAtMs != fixedNow.Add(5*time.Minute).UnixMilli() {
		t.Errorf("seq %d cap_seq %d expires %d", d.Seq, d.CapSeq, d.ExpiresAtMs)
	}
	if got := d.Shards(); !reflect.DeepEqual(got, []Shard{"gpu/h100", "gpu/a100"}) || !d.OnShard("gpu/a100") || d.OnShard("gpu/t4") {
		t.Errorf("shards %v", got)
	}
	// Monday's windows abut until midnight: the open period ends then.
	if tue := fixedNow.Add(12 * time.Hour).UnixMilli(); d.OpenUntilMs != tue || d.Closed {
		t.Errorf("open_until_ms %d closed %v, want %d (Tuesday 00:00)", d.OpenUntilMs, d.Closed, tue)
	}
	// Without a calendar (or one open all week) there is no end to name.
	c2 := fixtureCapacity(t, 2)
	c2.Calendar = nil
	if d2, err := NewDigest(DigestInput{Capacity: c2, Seq: 1, Now: fixedNow}); err != nil || d2.OpenUntilMs != 0 || d2.Closed {
		t.Errorf("no calendar: open_until_ms %d closed %v (%v)", d2.OpenUntilMs, d2.Closed, err)
	}
	// A withdrawal offers nothing, but its calendar is not closed.
	if dw, err := NewDigest(DigestInput{Capacity: c, Seq: 1, Now: fixedNow, Withdrawn: true}); err != nil || dw.Closed || dw.Models[0].Free != 0 {
		t.Errorf("withdrawn: %+v (%v)", dw, err)
	}

	// The 0.8x window never lowers the floor; outside the calendar nothing is free.
	c.Calendar[0].StartMin, c.Calendar[1].StartMin = 0, 13*60
	c.Calendar[0].EndMin = 13 * 60
	d, err = NewDigest(DigestInput{Capacity: c, Seq: 10, Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	if d.Floor.Silver != c.Floor.Silver || d.ExpiresAtMs != c.ExpiresAtMs { // the record expires before MaxDigestTTL
		t.Errorf("0.8x window: floor %d, expires %d", d.Floor.Silver, d.ExpiresAtMs)
	}
	c.ExpiresAtMs = fixedNow.Add(MaxCapacityTTL).UnixMilli()
	d, err = NewDigest(DigestInput{Capacity: c, Seq: 11, Now: fixedNow.Add(20 * time.Hour)}) // Tuesday: closed
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range d.Models {
		if m.Free != 0 || m.Held != 0 {
			t.Errorf("calendar closed, yet %s has %d free %d held", m.Model, m.Free, m.Held)
		}
	}
	if !d.Closed || d.OpenUntilMs != 0 {
		t.Errorf("calendar closed: closed %v, open_until_ms %d", d.Closed, d.OpenUntilMs)
	}
	// A tier the policy refuses has no floor in the digest.
	c.Policy.Tiers = []Tier{TierBronze}
	if d, err = NewDigest(DigestInput{Capacity: c, Seq: 12, Now: fixedNow}); err != nil || d.Floor.Gold != 0 || d.Floor.Silver != 0 {
		t.Errorf("bronze-only policy: floor %+v, err %v", d.Floor, err)
	}
}

// TestDigestGolden pins the digest payload encoding: capacity-digest.golden
// without the calendar fields (the fixture with them cleared: every
// digest before them, which must still decode and read as always open),
// capacity-digest-calendar.golden with open_until_ms.
// Regenerate with: go test ./auction -run TestDigestGolden -update
func TestDigestGolden(t *testing.T) {
	withCal := fixtureDigest(t, 2)
	if withCal.OpenUntilMs == 0 {
		t.Fatal("the fixture's calendar closes on Tuesday: open_until_ms should be set")
	}
	without := *withCal
	without.OpenUntilMs = 0
	for _, tc := range []struct {
		file string
		d    *Digest
	}{{"capacity-digest.golden", &without}, {"capacity-digest-calendar.golden", withCal}} {
		payload, err := attest.Marshal(tc.d)
		if err != nil {
			t.Fatal(err)
		}
		golden.Check(t, filepath.Join("testdata", tc.file), hex.EncodeToString(payload)+"\n")
		var back Digest
		if err := attest.Unmarshal(payload, &back); err != nil || !reflect.DeepEqual(&back, tc.d) {
			t.Errorf("%s decodes to %+v (%v)", tc.file, back, err)
		}
	}
	if strings.Contains(hexOf(t, &without), hex.EncodeToString([]byte("open_until_ms"))) {
		t.Error("a digest without an open period encodes the key")
	}
	if r := msgRFQ(t); !without.TakesNow(r, fixedNow.Add(MaxOpenPeriod)) || without.ClosedAt(fixedNow.Add(MaxOpenPeriod)) {
		t.Error("a digest without the calendar fields does not read as always open")
	}
}

func hexOf(t *testing.T, d *Digest) string {
	t.Helper()
	payload, err := attest.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(payload)
}

func TestDigestSealOpen(t *testing.T) {
	key, id := testKey(t, 2)
	d := fixtureDigest(t, 2)
	raw, err := SealDigest(d, key)
	if err != nil {
		t.Fatal(err)
	}
	got, signer, err := OpenDigest(raw)
	if err != nil || signer != id || !reflect.DeepEqual(got, d) {
		t.Fatalf("open: %+v %s %v", got, signer, err)
	}
	other, _ := testKey(t, 9)
	if _, err := SealDigest(d, other); !errors.Is(err, ErrNotOwner) {
		t.Errorf("seal with another key: %v", err)
	}
	forged, err := attest.Seal(d, other)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := OpenDigest(forged); !errors.Is(err, ErrNotOwner) {
		t.Errorf("open forged: %v", err)
	}
	big := fixtureDigest(t, 2)
	for i := range MaxDigestModels {
		big.Models = append(big.Models, DigestModel{Model: "m" + strings.Repeat("x", MaxModelLen-2) + string(rune('a'+i)),
			VRAMMiB: 1, ComputeCap: "1.0", Total: 1})
	}
	if _, err := SealDigest(big, key); !errors.Is(err, ErrInvalidMessage) {
		t.Errorf("too many models: %v", err)
	}
	if _, _, err := OpenDigest(make([]byte, MaxDigestSize+1)); !errors.Is(err, attest.ErrTooLarge) {
		t.Errorf("oversize: %v", err)
	}
	// The largest valid digest fits the size limit.
	max := fixtureDigest(t, 2)
	max.Models = nil
	for i := range MaxDigestModels {
		max.Models = append(max.Models, DigestModel{Model: strings.Repeat("x", MaxModelLen-1) + string(rune('a'+i)),
			VRAMMiB: maxVRAMMiB, ComputeCap: "10.10", Total: 4, Free: 2, Held: 2})
	}
	max.Region.Zone = strings.Repeat("z", MaxModelLen)
	max.OpenUntilMs = max.IssuedAtMs + MaxOpenPeriod.Milliseconds()
	if raw, err := SealDigest(max, key); err != nil || len(raw) > MaxDigestSize {
		t.Errorf("largest digest: %d bytes, %v", len(raw), err)
	}
}

func TestDigestValidate(t *testing.T) {
	for _, tc := range []struct {
		name, field string
		mut         func(*Digest)
	}{
		{"version", "v", func(d *Digest) { d.V = 3 }},
		{"peer", "peer", func(d *Digest) { d.Peer = "nobody" }},
		{"seq", "seq", func(d *Digest) { d.Seq = 0 }},
		{"lifetime", "expires_at_ms", func(d *Digest) { d.ExpiresAtMs = d.IssuedAtMs + MaxDigestTTL.Milliseconds() + 1 }},
		{"country", "region.country", func(d *Digest) { d.Region.Country = "DE" }},
		{"reachability", "reachability", func(d *Digest) { d.Reachability = "maybe" }},
		{"runtime", "runtimes[0]", func(d *Digest) { d.Runtimes = []string{"java"} }},
		{"no tier", "floor", func(d *Digest) { d.Floor = FloorPrice{} }},
		{"price", "floor.gold", func(d *Digest) { d.Floor.Gold = MaxPriceUUSD + 1 }},
		{"nothing offered", "models", func(d *Digest) { d.Models, d.Runtimes = nil, nil }},
		{"model slug", "models[0].model", func(d *Digest) { d.Models[0].Model = "H100" }},
		{"duplicate model", "models[1].model", func(d *Digest) { d.Models = append(d.Models, d.Models[0]) }},
		{"counts", "models[0]", func(d *Digest) { d.Models[0].Free, d.Models[0].Held = 2, 1 }},
		{"total", "models[0].total", func(d *Digest) { d.Models[0].Total = 0 }},
		{"too many gpus", "models", func(d *Digest) {
			d.Models[0].Total = MaxGPUs
			d.Models = append(d.Models, DigestModel{Model: "t4-16gb", VRAMMiB: 1, ComputeCap: "7.5", Total: 1})
		}},
		{"cc", "models[0].cc", func(d *Digest) { d.Models[0].ComputeCap = "nine" }},
		{"cores", "host.cpu_cores", func(d *Digest) { d.Host.CPUCores = 0 }},
		{"open period ended", "open_until_ms", func(d *Digest) { d.OpenUntilMs = d.IssuedAtMs }},
		{"open period too long", "open_until_ms", func(d *Digest) { d.OpenUntilMs = d.IssuedAtMs + MaxOpenPeriod.Milliseconds() + 1 }},
		{"closed and open", "closed", func(d *Digest) { d.Closed = true; d.Models[0].Free = 0 }},
		{"closed yet free", "models[0]", func(d *Digest) { d.Closed, d.OpenUntilMs = true, 0 }},
		{"closed yet cores free", "cpu", func(d *Digest) {
			d.Closed, d.OpenUntilMs, d.Models[0].Free = true, 0, 0
			d.CPU = &CPUOffer{Cores: 8, RAMMiB: 1024, FreeCores: 8, FloorMicro: 1}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := fixtureDigest(t, 2)
			tc.mut(d)
			err := d.Validate()
			if !errors.Is(err, ErrInvalidMessage) || !strings.Contains(err.Error(), tc.field+": ") {
				t.Errorf("err = %v, want a problem at %s", err, tc.field)
			}
		})
	}
}

func TestDigestTimeAndSupersede(t *testing.T) {
	d := fixtureDigest(t, 2)
	if err := d.CheckTime(fixedNow); err != nil {
		t.Error(err)
	}
	if err := d.CheckTime(time.UnixMilli(d.ExpiresAtMs)); !errors.Is(err, ErrExpired) {
		t.Errorf("at expiry: %v", err)
	}
	if err := d.CheckTime(fixedNow.Add(-MaxClockSkew - time.Millisecond)); !errors.Is(err, ErrNotYetValid) {
		t.Errorf("from the future: %v", err)
	}
	newer := *d
	newer.Seq++
	later := *d
	later.IssuedAtMs++
	if !newer.Supersedes(d) || d.Supersedes(&newer) || !later.Supersedes(d) || d.Supersedes(d) {
		t.Error("supersede order wrong")
	}
}

// An older digest crossed the held one in flight only when the provider
// published the two within DigestCrossing; a newer or equal one never did.
func TestDigestCrossedInFlight(t *testing.T) {
	held := fixtureDigest(t, 2)
	held.Seq = 5
	older := func(seq uint64, before time.Duration) *Digest {
		d := *held
		d.Seq, d.IssuedAtMs = seq, held.IssuedAtMs-before.Milliseconds()
		return &d
	}
	for _, tc := range []struct {
		name string
		d    *Digest
		want bool
	}{
		{"one seq behind, issued together", older(4, 0), true},
		{"three seq behind, issued DigestCrossing before", older(2, DigestCrossing), true},
		{"one seq behind, issued over DigestCrossing before", older(4, DigestCrossing+time.Millisecond), false},
		{"same seq, issued a second before", older(5, time.Second), true},
		{"the held digest itself", older(5, 0), false},
		{"a newer one", older(6, 0), false},
		{"a lower seq issued after the held one (the held one's clock went back)", older(4, -time.Minute), true},
	} {
		if got := tc.d.CrossedInFlight(held); got != tc.want {
			t.Errorf("%s: CrossedInFlight = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A digest's expanded record says what the digest says, so `market
// search` and CouldBid read digests as they read records.
func TestDigestCapacity(t *testing.T) {
	c := fixtureCapacity(t, 2)
	d := fixtureDigest(t, 2)
	got := d.Capacity()
	if got.Peer != c.Peer || got.FreeGPUs() != c.FreeGPUs() || len(got.GPUs) != len(c.GPUs) || got.Floor != d.Floor {
		t.Errorf("expanded %+v", got)
	}
	if err := got.Validate(); err != nil {
		t.Errorf("expanded record does not validate: %v", err)
	}
	r := msgRFQ(t)
	r.Regions = []string{"de"}
	r.Resources.Models = []string{"h100"}
	if CouldBid(r, c) != CouldBid(r, got) {
		t.Error("CouldBid differs on the record and its digest")
	}
	back, err := NewDigest(DigestInput{Capacity: got, Seq: d.Seq, Now: fixedNow, TTL: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	// The expanded record has no calendar: its floor already is the
	// window's, and it names no end to the open period.
	back.Floor, back.OpenUntilMs = d.Floor, d.OpenUntilMs
	if !reflect.DeepEqual(back, d) {
		t.Errorf("digest of the expansion %+v, want %+v", back, d)
	}
}

func FuzzOpenDigest(f *testing.F) {
	key, _ := testKey(f, 2)
	d := fixtureDigest(f, 2)
	valid, err := SealDigest(d, key)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(valid)
	f.Add(valid[:len(valid)/2])
	other, _ := testKey(f, 9)
	if forged, err := attest.Seal(d, other); err == nil {
		f.Add(forged)
	}
	bad := fixtureDigest(f, 2)
	bad.Models[0].Free = 99
	if invalid, err := attest.Seal(bad, key); err == nil {
		f.Add(invalid)
	}
	closed := fixtureDigest(f, 2)
	closed.OpenUntilMs, closed.Closed, closed.Models[0].Free = 0, true, 0
	if raw, err := SealDigest(closed, key); err == nil {
		f.Add(raw)
	} else {
		f.Fatal(err)
	}
	if raw, err := SealDigest(fixtureLotsDigest(f), key); err == nil {
		f.Add(raw)
	} else {
		f.Fatal(err)
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, signer, err := OpenDigest(raw)
		if err != nil {
			if got != nil {
				t.Fatal("returned a digest with an error")
			}
			return
		}
		if got.Peer != signer.String() {
			t.Fatal("accepted a digest not signed by its peer")
		}
		if err := got.Validate(); err != nil {
			t.Fatalf("accepted an invalid digest: %v", err)
		}
		shards := got.Shards()
		for s := range got.Lots {
			if !slices.Contains(shards, s) || !ValidLots(got.LotsOn(s)) || got.V != DigestVersion {
				t.Fatalf("accepted lots %v on shards %v (v%d)", got.Lots, shards, got.V)
			}
		}
		if got.Closed && (got.TakesNow(&RFQ{}, time.UnixMilli(got.IssuedAtMs)) || !got.ClosedAt(time.UnixMilli(got.IssuedAtMs))) {
			t.Fatal("a closed digest takes work")
		}
		if err := got.Capacity().Validate(); err != nil && len(got.Models) > 0 {
			t.Fatalf("valid digest expands to an invalid record: %v", err)
		}
	})
}
