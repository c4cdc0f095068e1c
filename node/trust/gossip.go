package trust

import (
	"context"
	"errors"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/idlegrid/idlegrid/attest"
	"github.com/idlegrid/idlegrid/attest/reputation"
	"github.com/idlegrid/idlegrid/auction"
	"github.com/idlegrid/idlegrid/p2p"
	"github.com/idlegrid/idlegrid/store"
)

// peerEntryRetention is how long a node keeps other providers' gossiped
// chain entries: long enough that a second, different entry for the same
// seq (equivocation) is caught when it comes.
const peerEntryRetention = time.Hour

// gossipedReceiptRetention is how long other renters' receipts count: by
// then reputation decay (7-day half-life) has made them negligible.
const gossipedReceiptRetention = 30 * 24 * time.Hour

// attestKind tells the records of the attestation topics apart (the
// network-wide idlegrid/attest/1 and the shards' topics).
type attestKind int

const (
	attestUnknown attestKind = iota
	attestSummary
	attestEntry
	attestReceipt
	attestAbandon
)

// gossipSignedBy reports whether a record by author may come in a gossip
// message signed by signer: the same peer, or no gossip signature at all
// (a later release's unsigned message, p2p.Validator; the record's own
// signature, which opening it checked, is what proves its author).
func gossipSignedBy(author, signer peer.ID) bool { return signer == "" || author == signer }

// attestSignedBy is gossipSignedBy for an author in text form.
func attestSignedBy(author string, signer peer.ID) bool {
	return signer == "" || author == signer.String()
}

// openedAttest is a message of an attestation topic, opened: the record
// it is (signature checked), its author (the record's signer, which a
// gossip signer must equal) and its time. The validator hands it on to
// OnAttest (p2p.RecordValidator), which so checks no signature again.
type openedAttest struct {
	kind    attestKind
	rec     any
	author  string
	atMs    int64
	voucher *attest.Voucher // a receipt's
}

// openAttestMessage opens a message of an attestation topic as whichever
// record it is; kind attestUnknown if none.
func openAttestMessage(data []byte) *openedAttest {
	if sum, author, err := auction.OpenAwardSummary(data); err == nil {
		return &openedAttest{kind: attestSummary, rec: sum, author: author.String(), atMs: sum.AtMs}
	}
	if e, err := attest.OpenEntry(data); err == nil {
		return &openedAttest{kind: attestEntry, rec: e, author: e.Provider, atMs: e.AtMs}
	}
	if rc, v, err := attest.OpenReceipt(data); err == nil {
		return &openedAttest{kind: attestReceipt, rec: rc, author: rc.Provider, atMs: rc.AtMs, voucher: v}
	}
	// An abandon note opens only with the renter's award to its provider
	// in it (auction.OpenAbandonNote): a false one is rejected.
	if n, _, err := auction.OpenAbandonNote(data); err == nil {
		return &openedAttest{kind: attestAbandon, rec: n, author: n.Provider, atMs: n.AtMs}
	}
	return &openedAttest{kind: attestUnknown}
}

// attestFromOtherVersion reports whether data is one of the topic's record
// kinds written by another protocol release (attest.FromOtherVersion).
func attestFromOtherVersion(data []byte) bool {
	_, _, errSum := auction.OpenAwardSummary(data)
	_, errEntry := attest.OpenEntry(data)
	_, _, errReceipt := attest.OpenReceipt(data)
	_, _, errAbandon := auction.OpenAbandonNote(data)
	return attest.FromOtherVersion(errSum) || attest.FromOtherVersion(errEntry) || attest.FromOtherVersion(errReceipt) ||
		attest.FromOtherVersion(errAbandon)
}

// ValidateAttest admits abandon notes to the network-wide
// idlegrid/attest/1, signed by their gossip author; a note older than
// auction.AbandonNoteFor is ignored. Heartbeats, award summaries and
// receipts moved to the shards' attestation topics (ValidateShardAttest):
// here they are ignored, neither delivered nor passed on, without a
// charge (a node of an earlier release still sends them here).
func (t *Trust) ValidateAttest(_ context.Context, _, signer peer.ID, data []byte) (p2p.Verdict, any) {
	m := openAttestMessage(data)
	if m.kind == attestUnknown && attestFromOtherVersion(data) {
		return p2p.Skip, nil
	}
	if m.kind == attestUnknown || !attestSignedBy(m.author, signer) {
		return p2p.Reject, nil
	}
	if m.kind != attestAbandon {
		return p2p.Ignore, nil
	}
	if time.UnixMilli(m.atMs).After(t.now().Add(MaxClockSkew)) {
		return p2p.Ignore, nil
	}
	if t.now().Sub(time.UnixMilli(m.atMs)) > auction.AbandonNoteFor {
		return p2p.Ignore, nil
	}
	return p2p.Accept, m
}

// ValidateFraud admits a fraud proof only if this node verifies it
// itself; a false proof is rejected, which costs its sender gossip score.
// A wrong-result proof is verified by re-running its job, charged to the
// forwarding peer's re-run budget (wrong_result.go).
func (t *Trust) ValidateFraud(ctx context.Context, from, _ peer.ID, data []byte) p2p.Verdict {
	if _, err := attest.OpenWrongResult(data); err == nil {
		return t.validateWrongResult(ctx, from, data)
	}
	offender, err := attest.VerifyFraudProof(data)
	if err != nil {
		if attest.FromOtherVersion(err) {
			return p2p.Skip // evidence this release cannot check
		}
		t.log.Warn("false fraud proof rejected", "from", from, "err", err)
		return p2p.Reject
	}
	t.repeats.hear(offender.String(), t.now()) // someone repeats it: this node need not
	return p2p.Accept
}

func (t *Trust) validateWrongResult(ctx context.Context, from peer.ID, data []byte) p2p.Verdict {
	offender, err := t.JudgeWrongResult(ctx, from, data)
	switch {
	case err == nil:
		t.log.Info("wrong-result proof upheld by re-run", "offender", offender, "from", from)
		return p2p.Accept
	case errors.Is(err, attest.ErrFalseProof):
		t.log.Warn("false wrong-result proof rejected", "from", from, "err", err)
		return p2p.Reject
	case errors.Is(err, errReplayBudget):
		t.log.Info("wrong-result proof not checked: the sender's re-run budget is spent", "from", from)
		return p2p.Ignore
	}
	t.log.Info("wrong-result proof not settled by re-run", "from", from, "err", err)
	return p2p.Ignore
}

// OnAttest handles a validated message of an attestation topic. opened is
// what its validator handed on (p2p.Message.Record); without it (nil, or
// another kind) the message is opened here.
func (t *Trust) OnAttest(ctx context.Context, raw []byte, opened any) {
	m, ok := opened.(*openedAttest)
	if !ok {
		m = openAttestMessage(raw)
	}
	switch m.kind {
	case attestSummary:
		sum := m.rec.(*auction.AwardSummary)
		t.watchPrefix(sum)
		t.storeSummary(raw, sum)
		if t.onSummary != nil {
			t.onSummary(sum)
		}
	case attestEntry:
		t.observeEntry(ctx, raw, m.rec.(*attest.Entry))
	case attestAbandon:
		if t.onAbandon != nil {
			t.onAbandon(m.rec.(*auction.AbandonNote))
		}
	case attestReceipt:
		if rc := m.rec.(*attest.Receipt); rc.Renter == t.ID().String() || rc.Provider == t.ID().String() {
			return // our own: stored for good when it was issued or fetched
		}
		provider := m.rec.(*attest.Receipt).Provider
		t.noteReceipt(provider, m.voucher.Renter)
		id := attest.RecordID(raw).String()
		keep, drop := t.receipts.admit(id, receiptEvidenceOf(m.rec.(*attest.Receipt), m.voucher))
		if keep {
			if err := t.db.PutReceiptTTL(id, raw, gossipedReceiptRetention); err != nil {
				t.log.Warn("store receipt", "err", err)
			} else {
				t.noteRenown(provider, m.voucher.Renter) // the rebuild, from the stored receipts, agrees
			}
			t.rep.Refresh() // another renter's receipt: the next background fold takes it
		}
		if len(drop) > 0 {
			if err := t.db.DeleteReceipts(drop); err != nil {
				t.log.Warn("drop receipts", "err", err) // the next sync drops them again
			}
		}
	}
}

// observeEntry records another provider's chain entry: its heartbeat, and
// its bytes for the seq. A different entry already stored for the same
// seq is equivocation: this node seals the proof, applies it and gossips it.
func (t *Trust) observeEntry(ctx context.Context, raw []byte, e *attest.Entry) {
	if e.Provider == t.ID().String() {
		return
	}
	existing, err := t.db.PutChainEntryTTL(e.Provider, e.Seq, raw, false, peerEntryRetention)
	if err == nil && existing == nil && e.Telemetry != nil && t.everBacked(e.Provider) {
		// Counted once: a provider of several shards sends each heartbeat
		// on each shard's attestation topic, and a node of two of them gets two
		// copies of one entry. Counted only for a provider whose record
		// this node checked: uptime is kept for good, one row per
		// provider, and fresh keys are free to send heartbeats (the
		// entry itself is kept an hour, for equivocation, either way);
		// backed keys are cheap too, so the rows are bounded
		// (maxUptimeRows).
		if err := t.db.ObserveHeartbeat(e.Provider, e.AtMs, t.uptimeRows); err != nil {
			t.log.Warn("store heartbeat", "err", err)
		}
	}
	if !errors.Is(err, store.ErrConflict) {
		return
	}
	proof, err := attest.SealFraudProof(&attest.FraudProof{
		V: attest.RecordsVersion, Reporter: t.ID().String(), Kind: attest.FraudEquivocation,
		Offender: e.Provider, Entries: [][]byte{existing, raw}, AtMs: t.now().UnixMilli(),
	}, t.key)
	if err != nil {
		t.log.Warn("seal equivocation proof", "provider", e.Provider, "err", err)
		return
	}
	t.log.Warn("provider equivocated: two chain entries with one seq", "provider", e.Provider, "seq", e.Seq)
	t.ApplyFraud(proof)
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := t.publish(pctx, p2p.TopicFraud, proof); err != nil {
		t.log.Warn("publish fraud proof", "err", err)
	}
	if offender, err := attest.VerifyFraudProof(proof); err == nil {
		t.repeats.hear(offender.String(), t.now())
	}
}

// ApplyFraud acts on a verified fraud proof: it is stored, the offender is
// blocked (connections closed and refused, gossip dropped) and its
// reputation is zero from now on. A wrong-result proof is judged again
// (its re-run's outcome is remembered, so a proof validated or sealed
// here costs nothing more).
func (t *Trust) ApplyFraud(proof []byte) {
	offender, err := attest.VerifyFraudProof(proof)
	if _, werr := attest.OpenWrongResult(proof); werr == nil {
		ctx, cancel := context.WithTimeout(context.Background(), attest.ReplayRuns*(attest.MaxReplayTimeMs*time.Millisecond+replayStartup))
		offender, err = t.JudgeWrongResult(ctx, t.self, proof)
		cancel()
	}
	if err != nil {
		return
	}
	if offender == t.ID() {
		t.log.Error("a verified fraud proof names this node: its chain was forked (a restored backup?) or its executor returned a wrong result")
		return
	}
	if !t.everBacked(offender.String()) {
		t.applyStrangerFraud(offender, proof)
		return
	}
	t.makeRoomForGood(offender.String())
	if err := t.db.PutFraud(offender.String(), proof); err != nil {
		t.log.Warn("store fraud proof", "err", err)
	}
	// Reputation first: once the offender is seen blocked, no read of its
	// score may be served a fold from before the proof (a node's peers
	// API, and TestWrongResultProvenAndExcluded, read the two together).
	t.rep.Invalidate()
	t.p2p.Block(offender)
	t.digests.Remove(offender.String())
}

// A fraud proof against a peer this node never checked a capacity record
// of costs its maker two signatures with a fresh key (it may prove its
// own equivocation). Kept for good and blocked for good, as a proof
// against a provider of this node's market is, each would be a row in
// every node's store, an entry in its blocklist and a signature check at
// every reputation fold, for ever. So such a proof is kept
// strangerFraudFor, at most maxStrangerFrauds of them, and its offender
// refused as long (p2p.Node.RefuseStranger: bounded on its own, so that a
// flood of such proofs cannot push the abuse bans out): long enough to
// outlast the record check of a real provider proven before this node
// met it.
const (
	strangerFraudFor  = 30 * 24 * time.Hour
	maxStrangerFrauds = 4096
)

func (t *Trust) applyStrangerFraud(offender peer.ID, proof []byte) {
	if err := t.db.PutFraudFor(offender.String(), proof, strangerFraudFor, t.strangerFrauds); err != nil {
		t.log.Warn("store fraud proof", "err", err)
	}
	t.rep.Invalidate()
	t.p2p.RefuseStranger(offender, strangerFraudFor)
	t.digests.Remove(offender.String())
}

// provenOffender returns the offender and date of a stored proof, which
// this node verified before storing it.
func (t *Trust) provenOffender(raw []byte) (peer.ID, time.Time, bool) {
	if offender, atMs, ok := t.provenWrongResult(raw); ok {
		return offender, time.UnixMilli(atMs), true
	}
	offender, err := attest.VerifyFraudProof(raw)
	if err != nil {
		return "", time.Time{}, false
	}
	at := t.now()
	if f, _ := attest.OpenFraudProof(raw); f != nil {
		at = time.UnixMilli(f.AtMs)
	}
	return offender, at, true
}

// BlockProven re-applies stored fraud proofs after a restart: an
// offender of a proof kept for good is blocked for good, one of a proof
// kept for a while refused until the proof goes (a stranger's, or one
// demoted by makeRoomForGood). The store holds only proofs this node
// verified before storing them, keyed by their offender.
func (t *Trust) BlockProven() {
	rows, err := t.db.FraudRows()
	if err != nil {
		t.log.Warn("list fraud proofs", "err", err)
		return
	}
	now := t.now()
	for _, r := range rows {
		offender, err := peer.Decode(r.Peer)
		switch {
		case err != nil || offender == t.ID():
		case r.Until.IsZero():
			t.p2p.Block(offender)
		case r.Until.After(now):
			t.p2p.RefuseStranger(offender, r.Until.Sub(now))
		}
	}
}

// receiptEvidence is the receipts (own and gossiped) reputation and
// renown count: the receipt book, brought up to date with the store.
func (t *Trust) receiptEvidence() []reputation.Receipt { return t.receipts.sync(t.db) }

// fraudEvidence turns stored fraud proofs into reputation evidence. Each
// proof is verified once (provenFrauds), not at every fold.
func (t *Trust) fraudEvidence() []reputation.Fraud {
	raws, err := t.db.Frauds()
	if err != nil {
		return nil
	}
	var out []reputation.Fraud
	seen := make(map[string]provenFraud, len(raws))
	for _, raw := range raws {
		id := attest.RecordID(raw).String()
		t.fraudsMu.Lock()
		pf, ok := t.provenFrauds[id]
		t.fraudsMu.Unlock()
		if !ok {
			offender, at, valid := t.provenOffender(raw)
			pf = provenFraud{valid: valid, f: reputation.Fraud{Provider: offender.String(), At: at, Proof: id}}
		}
		seen[id] = pf
		if pf.valid {
			out = append(out, pf.f)
		}
	}
	t.fraudsMu.Lock()
	t.provenFrauds = seen // the proofs stored now: one gone from the store is forgotten
	t.fraudsMu.Unlock()
	return out
}

// provenFraud is a stored proof as checked: valid, and the evidence.
type provenFraud struct {
	valid bool
	f     reputation.Fraud
}
