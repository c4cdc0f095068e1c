package trust

import (
	"context"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/node/roomtest"
	"github.com/idlegrid/idlegrid/p2p"
)

// TestValidateBeat: a beat topic admits its provider's telemetry entries
// only; other entries, other signers and garbage are rejected, an entry
// dated ahead is ignored, and another release's is skipped. A heartbeat
// delivered twice (a provider of two shards sends it on both) counts
// once as uptime.
func TestValidateBeat(t *testing.T) {
	peers := roomtest.Peers(t, 3)
	tr := newTrust(t, peers[0])
	prov, other := peers[1], peers[2]
	ctx := context.Background()
	now := time.Now()
	chain, err := attest.NewChain(prov.Key, nil)
	if err != nil {
		t.Fatal(err)
	}
	const uuid = "GPU-11111111-2222-3333-4444-555555555555"
	fp, _, err := chain.Append(now.UnixMilli(), &attest.Fingerprint{Driver: "550.54.15", CUDA: "12.4", GPUs: []attest.GPUFact{{
		UUID: uuid, Name: "NVIDIA A10", PCIDeviceID: 0x223610de, MemoryMiB: 24564, ComputeCap: "8.6", PowerLimitMW: 150_000,
	}}})
	if err != nil {
		t.Fatal(err)
	}
	window := func(at time.Time) []byte {
		raw, _, err := chain.Append(at.UnixMilli(), &attest.Telemetry{StartMs: at.Add(-time.Minute).UnixMilli(), EndMs: at.UnixMilli(),
			GPUs: []attest.GPUTelemetry{{UUID: uuid, Samples: 60, PowerAvgMW: 60_000, EnergyMJ: 3_600_000, EnergyMs: 60_000}}})
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	beat, next, ahead := window(now), window(now.Add(time.Minute)), window(now.Add(10*time.Minute))
	for _, c := range []struct {
		name   string
		signer *roomtest.Peer
		raw    []byte
		want   p2p.Verdict
	}{
		{"telemetry", prov, beat, p2p.Accept},
		{"fingerprint", prov, fp, p2p.Reject},
		{"other signer", other, beat, p2p.Reject},
		{"garbage", prov, []byte("not an entry"), p2p.Reject},
		{"newer version", prov, laterRecord(t, beat, prov.Key, newerVersion), p2p.Skip},
		{"dated ahead", prov, ahead, p2p.Ignore},
	} {
		if got := tr.ValidateBeat(ctx, c.signer.ID, c.signer.ID, c.raw); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}

	tr.OnAttest(ctx, beat)
	tr.OnAttest(ctx, beat)
	tr.OnAttest(ctx, next)
	us, err := tr.db.Uptimes()
	if err != nil || len(us) != 1 || us[0].Seen != 2 {
		t.Fatalf("uptimes %d (first %+v), %v: want one provider seen twice", len(us), us[0], err)
	}
}
