package node

import (
	"context"
	"errors"
	"time"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/attest/reputation"
	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/p2p"
	"github.com/idlegrid/idlegrid/store"
	"github.com/libp2p/go-libp2p/core/peer"
)

// peerEntryRetention is how long a node keeps other providers' gossiped
// chain entries: long enough that a second, different entry for the same
// seq (equivocation) is caught when it comes.
const peerEntryRetention = time.Hour

// gossipedReceiptRetention is how long other renters' receipts count: by
// then reputation decay (7-day half-life) has made them negligible.
const gossipedReceiptRetention = 30 * 24 * time.Hour

// heartbeatEvery is how often a provider sends its heartbeat (one signed
// telemetry entry per window).
func heartbeatEvery(c Config) time.Duration { return c.Attest.Window }

// attestKind tells the records that share idlegrid/attest/1 apart.
type attestKind int

const (
	attestUnknown attestKind = iota
	attestSummary
	attestEntry
	attestReceipt
)

// openAttestMessage opens a message of idlegrid/attest/1 as whichever
// record it is, and returns its author (the signer that must equal the
// gossip author).
func openAttestMessage(data []byte) (attestKind, any, string, int64) {
	if sum, author, err := auction.OpenAwardSummary(data); err == nil {
		return attestSummary, sum, author.String(), sum.AtMs
	}
	if e, err := attest.OpenEntry(data); err == nil {
		return attestEntry, e, e.Provider, e.AtMs
	}
	if rc, _, err := attest.OpenReceipt(data); err == nil {
		return attestReceipt, rc, rc.Provider, rc.AtMs
	}
	return attestUnknown, nil, "", 0
}

// validateAttest admits award summaries (the price index), chain entries
// (providers' heartbeats) and receipts, each signed by its gossip author.
func (n *Node) validateAttest(_ context.Context, _, signer peer.ID, data []byte) p2p.Verdict {
	kind, _, author, atMs := openAttestMessage(data)
	if kind == attestUnknown || author != signer.String() {
		return p2p.Reject
	}
	if time.UnixMilli(atMs).After(time.Now().Add(maxClockSkew)) {
		return p2p.Ignore
	}
	return p2p.Accept
}

// validateFraud admits a fraud proof only if this node verifies it
// itself; a false proof is rejected, which costs its sender gossip score.
func (n *Node) validateFraud(_ context.Context, _, _ peer.ID, data []byte) p2p.Verdict {
	if _, err := attest.VerifyFraudProof(data); err != nil {
		n.log.Warn("false fraud proof rejected", "err", err)
		return p2p.Reject
	}
	return p2p.Accept
}

// onAttest handles a validated message of idlegrid/attest/1.
func (n *Node) onAttest(ctx context.Context, raw []byte) {
	kind, rec, _, _ := openAttestMessage(raw)
	switch kind {
	case attestSummary:
		sum := n.storeSummary(raw)
		if sum != nil && n.bidder != nil {
			n.bidder.auctionClosed(sum)
		}
	case attestEntry:
		n.observeEntry(ctx, raw, rec.(*attest.Entry))
	case attestReceipt:
		if rc := rec.(*attest.Receipt); rc.Renter == n.ID().String() || rc.Provider == n.ID().String() {
			return // our own: stored for good when it was issued or fetched
		}
		if err := n.db.PutReceiptTTL(attest.RecordID(raw).String(), raw, gossipedReceiptRetention); err != nil {
			n.log.Warn("store receipt", "err", err)
		}
		n.rep.invalidate()
	}
}

// observeEntry records another provider's chain entry: its heartbeat, and
// its bytes for the seq. A different entry already stored for the same
// seq is equivocation: this node seals the proof, applies it and gossips it.
func (n *Node) observeEntry(ctx context.Context, raw []byte, e *attest.Entry) {
	if e.Provider == n.ID().String() {
		return
	}
	if e.Telemetry != nil {
		if err := n.db.ObserveHeartbeat(e.Provider, e.AtMs); err != nil {
			n.log.Warn("store heartbeat", "err", err)
		}
	}
	existing, err := n.db.PutChainEntryTTL(e.Provider, e.Seq, raw, false, peerEntryRetention)
	if !errors.Is(err, store.ErrConflict) {
		return
	}
	proof, err := attest.SealFraudProof(&attest.FraudProof{
		V: attest.RecordsVersion, Reporter: n.ID().String(), Kind: attest.FraudEquivocation,
		Offender: e.Provider, Entries: [][]byte{existing, raw}, AtMs: time.Now().UnixMilli(),
	}, n.key)
	if err != nil {
		n.log.Warn("seal equivocation proof", "provider", e.Provider, "err", err)
		return
	}
	n.log.Warn("provider equivocated: two chain entries with one seq", "provider", e.Provider, "seq", e.Seq)
	n.applyFraud(proof)
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := n.p2p.Publish(pctx, p2p.TopicFraud, proof, 0); err != nil {
		n.log.Warn("publish fraud proof", "err", err)
	}
}

// applyFraud acts on a verified fraud proof: it is stored, the offender is
// blocked (connections closed and refused, gossip dropped) and its
// reputation is zero from now on.
func (n *Node) applyFraud(proof []byte) {
	offender, err := attest.VerifyFraudProof(proof)
	if err != nil {
		return
	}
	if offender == n.ID() {
		n.log.Error("a verified fraud proof names this node: its chain was forked (a restored backup?)")
		return
	}
	if err := n.db.PutFraud(offender.String(), proof); err != nil {
		n.log.Warn("store fraud proof", "err", err)
	}
	n.p2p.Block(offender)
	n.rep.invalidate()
}

// blockProven re-applies stored fraud proofs after a restart.
func (n *Node) blockProven() {
	proofs, err := n.db.Frauds()
	if err != nil {
		return
	}
	for _, p := range proofs {
		if offender, err := attest.VerifyFraudProof(p); err == nil && offender != n.ID() {
			n.p2p.Block(offender)
		}
	}
}

// receiptEvidence turns stored receipts (own and gossiped) into
// reputation evidence; each was verified (both signatures) on arrival and
// is verified again here.
func (n *Node) receiptEvidence() []reputation.Receipt {
	raws, err := n.db.Receipts()
	if err != nil {
		return nil
	}
	var out []reputation.Receipt
	for _, raw := range raws {
		id := attest.RecordID(raw).String()
		if r, ok := n.rep.parsed(id); ok {
			out = append(out, r)
			continue
		}
		rc, v, err := attest.OpenReceipt(raw)
		if err != nil {
			continue
		}
		r := reputation.Receipt{
			Lease: rc.Lease, Provider: rc.Provider, Renter: v.Renter, At: time.UnixMilli(rc.AtMs),
			State:    outcomeState(&store.Lease{State: rc.Outcome}),
			GPUHours: float64(rc.GPUMs) / float64(time.Hour/time.Millisecond),
		}
		n.rep.remember(id, r)
		out = append(out, r)
	}
	return out
}

// fraudEvidence turns stored fraud proofs into reputation evidence.
func (n *Node) fraudEvidence() []reputation.Fraud {
	raws, err := n.db.Frauds()
	if err != nil {
		return nil
	}
	var out []reputation.Fraud
	for _, raw := range raws {
		offender, err := attest.VerifyFraudProof(raw)
		if err != nil {
			continue
		}
		f, _ := attest.OpenFraudProof(raw)
		at := time.Now()
		if f != nil {
			at = time.UnixMilli(f.AtMs)
		}
		out = append(out, reputation.Fraud{Provider: offender.String(), At: at, Proof: attest.RecordID(raw).String()})
	}
	return out
}
