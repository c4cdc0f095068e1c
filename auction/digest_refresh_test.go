package auction

import (
	"testing"
	"time"
)

// TestDigestRefresh: a small shard refreshes at the base period; a large
// one stretches the refresh so its providers' refreshes stay within the
// budget, up to the cap; the base wins over a cap below it.
func TestDigestRefresh(t *testing.T) {
	for _, c := range []struct {
		n          int
		base, most time.Duration
		want       time.Duration
	}{
		{0, time.Minute, 10 * time.Minute, time.Minute},
		{48, time.Minute, 10 * time.Minute, time.Minute},
		{120, time.Minute, 10 * time.Minute, time.Minute},
		{600, time.Minute, 10 * time.Minute, 5 * time.Minute},
		{20_000, time.Minute, 10 * time.Minute, 10 * time.Minute},
		{20_000, 5 * time.Second, 10 * time.Second, 10 * time.Second},
		{20_000, time.Minute, 20 * time.Second, time.Minute},
	} {
		got := DigestRefresh(c.n, c.base, c.most)
		if got != c.want {
			t.Errorf("DigestRefresh(%d, %v, %v) = %v, want %v", c.n, c.base, c.most, got, c.want)
		}
		// Within the budget wherever the cap allows it.
		if rate := float64(c.n) / got.Seconds(); got < c.most && got > c.base && rate > DigestRefreshBudget+1e-9 {
			t.Errorf("%d providers refreshing every %v cost %.2f digests/s, over the budget", c.n, got, rate)
		}
	}
}

// TestDigestChangedFor: a GPU lease changes the digest for its family's
// shard only; a CPU change for every shard; a new seq or date alone, or a
// firm hold alone (free again within seconds), for none.
func TestDigestChangedFor(t *testing.T) {
	base := &Digest{
		Peer: "p", Seq: 1, CapSeq: 1, IssuedAtMs: 1000, ExpiresAtMs: 2000, Runtimes: []string{RuntimeDocker, RuntimeWasm},
		Host: Host{CPUCores: 32}, CPU: &CPUOffer{Cores: 8, FreeCores: 8},
		Models: []DigestModel{{Model: "a10-24gb", Total: 2, Free: 2}, {Model: "h100-80gb", Total: 1, Free: 1}},
	}
	edit := func(f func(d *Digest)) *Digest {
		d := *base
		d.Models = append([]DigestModel(nil), base.Models...)
		c := *base.CPU
		d.CPU = &c
		f(&d)
		return &d
	}
	a10, h100, cpu := GPUShard("a10"), GPUShard("h100"), ShardCPU
	for _, c := range []struct {
		name string
		cur  *Digest
		want map[Shard]bool
	}{
		{"refresh only", edit(func(d *Digest) { d.Seq, d.CapSeq, d.IssuedAtMs, d.ExpiresAtMs = 2, 2, 3000, 4000 }), map[Shard]bool{}},
		{"an A10 held", edit(func(d *Digest) { d.Seq = 2; d.Models[0].Free, d.Models[0].Held = 1, 1 }), map[Shard]bool{}},
		{"an A10 leased", edit(func(d *Digest) { d.Seq = 2; d.Models[0].Free = 1 }), map[Shard]bool{a10: true}},
		{"the held A10 leased", edit(func(d *Digest) { d.Seq = 2; d.Models[0].Free, d.Models[0].Held = 0, 1 }), map[Shard]bool{a10: true}},
		{"CPU taken", edit(func(d *Digest) { d.CPU.FreeCores = 4 }), map[Shard]bool{a10: true, h100: true, cpu: true}},
		{"floor changed", edit(func(d *Digest) { d.Floor.Silver = 5 }), map[Shard]bool{a10: true, h100: true, cpu: true}},
	} {
		for _, s := range []Shard{a10, h100, cpu} {
			if got := DigestChangedFor(base, c.cur, s); got != c.want[s] {
				t.Errorf("%s on %s: changed %v, want %v", c.name, s, got, c.want[s])
			}
		}
	}
	if !DigestChangedFor(nil, base, cpu) || DigestChangedFor(nil, nil, cpu) {
		t.Error("nil prev: changed; both nil: not")
	}
}
