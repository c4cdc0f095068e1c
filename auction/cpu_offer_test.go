package auction

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/idlegrid/idlegrid/attest"
)

func testCPUOffer() *CPUOffer {
	return &CPUOffer{Cores: 32, RAMMiB: 256 << 10, FreeCores: 30, FreeRAMMiB: 255 << 10, FloorMicro: 20_000}
}

// TestCapacityCPUIsCompatible: a record without a CPU share encodes as
// before (the golden bytes from before the field decode with CPU nil), and
// one with a share round-trips through seal and open.
func TestCapacityCPUIsCompatible(t *testing.T) {
	want, err := os.ReadFile(filepath.Join("testdata", "capacity.golden"))
	if err != nil {
		t.Fatal(err)
	}
	old, err := hex.DecodeString(strings.TrimSpace(string(want)))
	if err != nil {
		t.Fatal(err)
	}
	var back Capacity
	if err := attest.Unmarshal(old, &back); err != nil || back.CPU != nil {
		t.Fatalf("old golden record: CPU %+v, err %v; want nil", back.CPU, err)
	}
	key, _ := testKey(t, 1)
	c := fixtureCapacity(t, 1)
	c.CPU = testCPUOffer()
	out, _, err := OpenCapacity(mustSealCapacity(t, c, key))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out.CPU, c.CPU) {
		t.Fatalf("CPU share %+v after a round trip, want %+v", out.CPU, c.CPU)
	}
}

func TestCapacityCPUValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(o *CPUOffer)
		want string
	}{
		{"valid", func(*CPUOffer) {}, ""},
		{"no cores", func(o *CPUOffer) { o.Cores, o.FreeCores = 0, 0 }, "cpu.cores: 0 out of range 1..64"},
		{"more cores than the host", func(o *CPUOffer) { o.Cores = 65 }, "cpu.cores: 65 out of range 1..64"},
		{"more free than offered", func(o *CPUOffer) { o.FreeCores = 33 }, "cpu.free_cores: 33 exceeds cores 32"},
		{"more RAM than the host", func(o *CPUOffer) { o.RAMMiB = 513 << 10 }, "cpu.ram_mib"},
		{"more free RAM than offered", func(o *CPUOffer) { o.FreeRAMMiB = 257 << 10 }, "cpu.free_ram_mib"},
		{"no floor", func(o *CPUOffer) { o.FloorMicro = 0 }, "cpu.floor: 0 uUSD"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fixtureCapacity(t, 1)
			c.CPU = testCPUOffer()
			tc.mod(c.CPU)
			err := c.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestDigestCPU: a digest carries the CPU share at the calendar's factor,
// puts a docker-only provider with a share on the CPU shard, and bounded
// bidding prices CPU-only RFQs on it.
func TestDigestCPU(t *testing.T) {
	c := fixtureCapacity(t, 1)
	c.Calendar = nil
	c.Runtimes = []string{RuntimeDocker}
	c.CPU = testCPUOffer()
	d, err := NewDigest(DigestInput{Capacity: c, Seq: 1, Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(d.CPU, c.CPU) {
		t.Fatalf("digest CPU %+v, want %+v", d.CPU, c.CPU)
	}
	if !d.OnShard(ShardCPU) {
		t.Fatalf("shards %v: a provider with a CPU share belongs on the CPU shard", d.Shards())
	}
	if got := d.Capacity().CPU; !reflect.DeepEqual(got, c.CPU) {
		t.Fatalf("expanded record CPU %+v", got)
	}
	r := matchRFQ()
	r.Resources = Resources{CPUCores: 4, RAMMiB: 1024}
	r.MaxPriceMicro, r.MaxDurationSec = 100_000, 3600
	for _, tc := range []struct {
		name  string
		mod   func(r *RFQ)
		shard Shard
		price uint64
		ok    bool
	}{
		{"fits on the CPU shard", func(*RFQ) {}, ShardCPU, 80_000, true},
		{"not on a GPU shard", func(*RFQ) {}, GPUShard("h100"), 0, false},
		{"too many cores", func(r *RFQ) { r.Resources.CPUCores = 31 }, ShardCPU, 0, false},
		{"above the max price", func(r *RFQ) { r.MaxPriceMicro = 79_999 }, ShardCPU, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rr := *r
			tc.mod(&rr)
			price, gpus, ok := DigestFitsOn(&rr, d, tc.shard)
			if ok != tc.ok || gpus != 0 || ok && price != tc.price {
				t.Fatalf("DigestFitsOn = %d, %d, %v; want %d, 0, %v", price, gpus, ok, tc.price, tc.ok)
			}
		})
	}
}

func TestCouldBidCPUOnly(t *testing.T) {
	c := fixtureCapacity(t, 1)
	r := cpuRFQ()
	if CouldBid(r, c) {
		t.Fatal("a provider without a CPU share could bid on CPU-only work")
	}
	c.CPU = testCPUOffer()
	if !CouldBid(r, c) {
		t.Fatal("a provider with a free CPU share could not bid on CPU-only work")
	}
	c.CPU.FreeCores = 1
	if CouldBid(r, c) {
		t.Fatal("a share with 1 free core could bid on a 2-core job")
	}
}
