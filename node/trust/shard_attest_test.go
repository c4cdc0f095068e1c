package trust

import (
	"context"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/auction/auctiontest"
	"github.com/idlegrid/idlegrid/node/roomtest"
	"github.com/idlegrid/idlegrid/p2p"
)

// TestValidateShardAttest: a shard's attestation topic admits its
// provider's telemetry entries (no other entry), award summaries whose
// model belongs on the shard and receipts; other signers, abandon notes
// and garbage are rejected, a record dated ahead is ignored, and another
// release's is skipped. A heartbeat delivered twice (a provider of two
// shards sends it on both) counts once as uptime.
func TestValidateShardAttest(t *testing.T) {
	peers := roomtest.Peers(t, 3)
	tr := newTrust(t, peers[0])
	prov, other := peers[1], peers[2]
	ctx := context.Background()
	now := time.Now()
	fp, window := a10Beats(t, prov, now)
	beat, next, ahead := window(now), window(now.Add(time.Minute)), window(now.Add(10*time.Minute))
	a10Sum, sumOf := summaryOf(t, other, prov, "a10-24gb", now)
	h100Sum, _ := summaryOf(t, other, prov, "h100-80gb", now)
	cpuSum, _ := summaryOf(t, other, prov, auction.CPUModel, now)
	receipt := receiptOf(t, other, prov, sumOf, now)
	note, err := auction.NoteAbandoned(sumOf.AwardEnv, now)
	if err != nil {
		t.Fatal(err)
	}
	abandon, err := auction.SealAbandonNote(note, prov.Key)
	if err != nil {
		t.Fatal(err)
	}
	a10, h100, cpu := auction.GPUShard("a10"), auction.GPUShard("h100"), auction.ShardCPU
	for _, c := range []struct {
		name   string
		shard  auction.Shard
		signer *roomtest.Peer
		raw    []byte
		want   p2p.Verdict
	}{
		{"telemetry", a10, prov, beat, p2p.Accept},
		{"telemetry on the CPU shard", cpu, prov, beat, p2p.Accept},
		{"fingerprint", a10, prov, fp, p2p.Reject},
		{"other signer", a10, other, beat, p2p.Reject},
		{"garbage", a10, prov, []byte("not an entry"), p2p.Reject},
		{"newer version", a10, prov, laterRecord(t, beat, prov.Key, newerVersion), p2p.Skip},
		{"dated ahead", a10, prov, ahead, p2p.Ignore},
		{"summary on its model's shard", a10, other, a10Sum, p2p.Accept},
		{"summary on another GPU shard of its RFQ", h100, other, a10Sum, p2p.Accept},
		{"GPU summary on the CPU shard", cpu, other, h100Sum, p2p.Reject},
		{"CPU summary on the CPU shard", cpu, other, cpuSum, p2p.Accept},
		{"CPU summary on a GPU shard", a10, other, cpuSum, p2p.Reject},
		{"summary signed by its provider", a10, prov, a10Sum, p2p.Reject},
		{"receipt signed by its renter", a10, other, receipt, p2p.Reject},
		{"abandon note", a10, prov, abandon, p2p.Reject},
	} {
		if got, _ := tr.ValidateShardAttest(c.shard.AttestTopic())(ctx, c.signer.ID, c.signer.ID, c.raw); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	// A receipt is taken only of a provider this node checked a record of.
	if got, _ := tr.ValidateShardAttest(a10.AttestTopic())(ctx, prov.ID, prov.ID, receipt); got != p2p.Withhold {
		t.Errorf("receipt of a provider nobody checked: %v, want withheld", got)
	}
	markBacked(tr, prov)
	if got, _ := tr.ValidateShardAttest(a10.AttestTopic())(ctx, prov.ID, prov.ID, receipt); got != p2p.Accept {
		t.Errorf("receipt: %v, want accepted", got)
	}
	if got, _ := tr.ValidateShardAttest("idlegrid/attest/1")(ctx, prov.ID, prov.ID, beat); got != p2p.Reject {
		t.Errorf("the network-wide topic as a shard's: %v, want reject", got)
	}
	// The network-wide topic keeps only abandon notes; what moved to the
	// shards is dropped there without a charge.
	for _, c := range []struct {
		name   string
		signer *roomtest.Peer
		raw    []byte
		want   p2p.Verdict
	}{
		{"abandon note", prov, abandon, p2p.Accept},
		{"heartbeat", prov, beat, p2p.Ignore},
		{"summary", other, a10Sum, p2p.Ignore},
		{"receipt", prov, receipt, p2p.Ignore},
		{"garbage", prov, []byte("garbage"), p2p.Reject},
	} {
		if got, _ := tr.ValidateAttest(ctx, c.signer.ID, c.signer.ID, c.raw); got != c.want {
			t.Errorf("idlegrid/attest/1, %s: %v, want %v", c.name, got, c.want)
		}
	}

	tr.OnAttest(ctx, beat, nil)
	tr.OnAttest(ctx, beat, nil)
	tr.OnAttest(ctx, next, nil)
	us, err := tr.db.Uptimes()
	if err != nil || len(us) != 1 || us[0].Seen != 2 {
		t.Fatalf("uptimes %d (first %+v), %v: want one provider seen twice", len(us), us[0], err)
	}
}

// a10Beats starts the chain of a provider of one A10 at at: its
// fingerprint entry, and a func that appends the telemetry window ending
// at a time (a heartbeat).
func a10Beats(t *testing.T, prov *roomtest.Peer, at time.Time) (fingerprint []byte, window func(end time.Time) []byte) {
	t.Helper()
	chain, err := attest.NewChain(prov.Key, nil)
	if err != nil {
		t.Fatal(err)
	}
	const uuid = "GPU-11111111-2222-3333-4444-555555555555"
	fingerprint, _, err = chain.Append(at.UnixMilli(), &attest.Fingerprint{Driver: "550.54.15", CUDA: "12.4", GPUs: []attest.GPUFact{{
		UUID: uuid, Name: "NVIDIA A10", PCIDeviceID: 0x223610de, MemoryMiB: 24564, ComputeCap: "8.6", PowerLimitMW: 150_000,
	}}})
	if err != nil {
		t.Fatal(err)
	}
	return fingerprint, func(end time.Time) []byte {
		t.Helper()
		raw, _, err := chain.Append(end.UnixMilli(), &attest.Telemetry{StartMs: end.Add(-time.Minute).UnixMilli(), EndMs: end.UnixMilli(),
			GPUs: []attest.GPUTelemetry{{UUID: uuid, Samples: 60, PowerAvgMW: 60_000, EnergyMJ: 3_600_000, EnergyMs: 60_000}}})
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
}

// summaryOf seals a one-GPU lease's award summary from renter to provider.
func summaryOf(t *testing.T, renter, provider *roomtest.Peer, model string, at time.Time) ([]byte, *auction.AwardSummary) {
	t.Helper()
	raw, err := auctiontest.Summary(renter.Key, provider.Key, auctiontest.Lease{Model: model, Tier: auction.TierBronze, GPUs: 1, PriceMicro: 1_000_000, At: at})
	if err != nil {
		t.Fatal(err)
	}
	sum, _, err := auction.OpenAwardSummary(raw)
	if err != nil {
		t.Fatal(err)
	}
	return raw, sum
}

// receiptOf seals the provider's receipt of the summary's lease over the
// renter's voucher.
func receiptOf(t *testing.T, renter, provider *roomtest.Peer, sum *auction.AwardSummary, at time.Time) []byte {
	t.Helper()
	v, err := attest.SealVoucher(&attest.Voucher{V: attest.RecordsVersion, Lease: sum.Award, Renter: renter.ID.String(), Provider: provider.ID.String(),
		Seq: 1, AmountMicro: 10_000, CoveredUntilMs: at.UnixMilli(), IssuedMs: at.UnixMilli()}, renter.Key)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := attest.SealReceipt(&attest.Receipt{V: attest.RecordsVersion, Lease: sum.Award, Provider: provider.ID.String(), Renter: renter.ID.String(),
		Outcome: "finished", FirstSeq: 1, LastSeq: 2, AtMs: at.UnixMilli(), Voucher: v}, provider.Key)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestOneHeartbeatPerSlot: a node admits one heartbeat per provider and
// slot (attest.BeatSlot): a later entry of a slot already heard, and an
// entry of an earlier slot, are withheld (dropped, charged to nobody); a second entry for a seq already
// heard (equivocation) still gets through to be proven. Uptime counts one
// heartbeat per slot as full, and only of a provider whose record the
// node checked.
func TestOneHeartbeatPerSlot(t *testing.T) {
	peers := roomtest.Peers(t, 3)
	tr := newTrust(t, peers[0])
	prov := peers[1]
	ctx := context.Background()
	every := tr.cfg.BeatEvery
	id := prov.ID.String()
	// The start of the provider's first slot after five minutes ago.
	from := peers[0].Clock.Now().Add(-5 * time.Minute).UnixMilli()
	lo, hi := from, from+every.Milliseconds()
	for lo < hi {
		mid := (lo + hi) / 2
		if attest.BeatSlot(id, mid, every) > attest.BeatSlot(id, from, every) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	start := time.UnixMilli(lo)
	const uuid = "GPU-11111111-2222-3333-4444-555555555555"
	fp := &attest.Fingerprint{Driver: "550.54.15", CUDA: "12.4", GPUs: []attest.GPUFact{{
		UUID: uuid, Name: "NVIDIA A10", PCIDeviceID: 0x223610de, MemoryMiB: 24564, ComputeCap: "8.6", PowerLimitMW: 150_000,
	}}}
	newChain := func() *attest.Chain {
		c, err := attest.NewChain(prov.Key, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.Append(start.Add(-time.Minute).UnixMilli(), fp); err != nil {
			t.Fatal(err)
		}
		return c
	}
	window := func(c *attest.Chain, at time.Time, power uint64) []byte {
		raw, _, err := c.Append(at.UnixMilli(), &attest.Telemetry{StartMs: at.Add(-time.Second).UnixMilli(), EndMs: at.UnixMilli(),
			GPUs: []attest.GPUTelemetry{{UUID: uuid, Samples: 1, PowerAvgMW: power, EnergyMJ: power, EnergyMs: 1000}}})
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	chain, fork := newChain(), newChain()
	first := window(chain, start.Add(time.Second), 60_000)
	sameSlot := window(chain, start.Add(every/2), 60_000)
	nextSlot := window(chain, start.Add(every+time.Second), 60_000)
	forked := window(fork, start.Add(time.Second), 61_000) // first's seq, other bytes
	validate := tr.ValidateShardAttest(auction.GPUShard("a10").AttestTopic())
	for _, c := range []struct {
		name string
		raw  []byte
		want p2p.Verdict
	}{
		{"the slot's first", first, p2p.Accept},
		{"the same again (another shard's copy)", first, p2p.Accept},
		{"a later entry of the same slot", sameSlot, p2p.Withhold},
		{"another entry for the first's seq", forked, p2p.Accept},
		{"the next slot's first", nextSlot, p2p.Accept},
		{"an entry of an earlier slot", sameSlot, p2p.Withhold},
	} {
		if got, _ := validate(ctx, prov.ID, prov.ID, c.raw); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	// A node that never checked the provider's record keeps no uptime of
	// it (fresh keys are free to send heartbeats).
	unchecked := newTrust(t, peers[2])
	unchecked.OnAttest(ctx, first, nil)
	unchecked.OnAttest(ctx, nextSlot, nil)
	if us, err := unchecked.db.Uptimes(); err != nil || len(us) != 0 {
		t.Fatalf("uptimes of a provider nobody checked: %+v, %v", us, err)
	}
	markBacked(tr, prov)
	tr.OnAttest(ctx, first, nil)
	tr.OnAttest(ctx, nextSlot, nil)
	us, err := tr.db.Uptimes()
	if err != nil || len(us) != 1 {
		t.Fatalf("uptimes %+v, %v", us, err)
	}
	if u := uptimeEvidence(us[0], every); u.Seen != 2 || u.Expected != 2 {
		t.Errorf("uptime of two heartbeats in two slots: seen %d of %d, want 2 of 2", u.Seen, u.Expected)
	}
}
