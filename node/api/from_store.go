package api

import (
	"time"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/attest/reputation"
	"github.com/idlegrid/idlegrid/store"
)

// EventFromStore is the API's view of a stored job event.
func EventFromStore(ev store.JobEvent) JobEvent {
	return JobEvent{
		At: time.UnixMilli(ev.AtMs).UTC(), Kind: ev.Kind, Message: ev.Message,
		Bids: ev.Bids, BestPriceUSD: float64(ev.BestPriceMicro) / 1e6,
	}
}

// LeaseFromStore is the API's view of a stored lease.
func LeaseFromStore(l *store.Lease) Lease {
	out := Lease{
		ID: l.ID, Side: l.Side, JobID: l.RenterJobID(), Renter: l.Renter, Provider: l.Provider, GPUs: l.GPUs,
		PriceUSD: float64(l.PriceMicro) / 1e6, Tier: l.Tier, State: l.State, Reason: l.Reason,
		StartsAt: time.UnixMilli(l.StartsAtMs).UTC(), EndsAt: time.UnixMilli(l.EndsAtMs).UTC(), NoticeSec: l.NoticeSec,
	}
	if l.PreemptAtMs != 0 {
		out.PreemptAt = time.UnixMilli(l.PreemptAtMs).UTC()
	}
	out.Runtime, out.ExitCode = l.Runtime, l.ExitCode
	out.OutputCID, out.OutputSize, out.LogBytes = l.OutputCID, l.OutputSize, l.LogBytes
	out.Health = l.Health
	out.Artifact, out.Run = l.Artifact, l.Run
	if l.WorkStartedMs != 0 {
		out.StartedAt = time.UnixMilli(l.WorkStartedMs).UTC()
	}
	if l.WorkFinishedMs != 0 {
		out.FinishedAt = time.UnixMilli(l.WorkFinishedMs).UTC()
	}
	out.PaidUSD = float64(l.PaidMicro) / 1e6
	if l.PaidUntilMs != 0 {
		out.PaidUntil = time.UnixMilli(l.PaidUntilMs).UTC()
	}
	if len(l.Receipt) > 0 {
		out.ReceiptCID = attest.RecordID(l.Receipt).String()
	}
	return out
}

// ReputationFrom is the API's view of a reputation result.
func ReputationFrom(r reputation.Result) Reputation {
	return Reputation{
		Provider: r.Provider, Score: r.Score, Badge: r.Badge.String(), Fraud: r.Fraud,
		OwnSuccesses: r.OwnSuccesses, OwnFailures: r.OwnFailures, OwnNeutral: r.OwnNeutral,
		GossipSuccesses: r.GossipSuccesses, GossipFailures: r.GossipFailures, GossipIgnored: r.GossipIgnored,
		UptimeWindows: r.UptimeWindows, UptimeRatio: r.UptimeRatio, GPUHours: r.EffectiveGPUHours,
	}
}
