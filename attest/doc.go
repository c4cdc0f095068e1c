// Package attest is idlegrid's signed-record layer: the codec every record
// kind travels in, the provider's hash chain of telemetry attestations,
// vouchers and receipts, the verifier, and fraud proofs (DESIGN.md §4, §8).
//
// # Codec
//
// A record is a go-libp2p core/record Envelope whose payload is canonical
// CBOR (RFC 8949 core deterministic encoding). Each record kind is described
// by a [Kind]: its signature domain, its payload type and the payload
// versions this build understands. Kinds are registered once, at package
// initialisation, with [Register], so that two kinds can never share a domain
// or a payload type and a record of one kind can never be accepted as another.
//
// [Seal] encodes and signs a payload. [Open] is the only way in: it checks the
// size limit before parsing anything, then the envelope's canonical form, the
// payload type, the signature, the payload version, and finally decodes the
// payload strictly (no unknown fields, no duplicate keys, bounded nesting and
// lengths, canonical bytes only). [RecordID] names a record by the CIDv1 of
// its envelope bytes.
//
// # Provider chain
//
// Each provider keeps one hash chain of [Entry] records (kind
// "chain-entry"): entry n has Seq n and Prev = RecordID of entry n-1, and
// carries exactly one body: a hardware [Fingerprint] (on start and on
// change), a [Telemetry] window (per GPU: utilization, memory,
// temperature, power, energy delta, ECC and XID deltas, throttle bits, the
// lease and renter it served) or a [JobEvent] (started, finished,
// preempted, cancelled, failed). [Chain] appends and links entries from a
// persisted [Head]; [TelemetryWindow] aggregates [GPUSample]s into a
// Telemetry body; [Entry.Leases] says which renters an entry concerns.
//
// # Payment
//
// Each interval the renter verifies the telemetry and signs a cumulative
// [Voucher]. At the end the provider signs a [Receipt] that embeds the last
// voucher byte for byte, so [OpenReceipt] checks both signatures from one
// record.
//
// # Verification and fraud
//
// [Verify] runs named checks over a chain segment ([Checks]: signature,
// continuity, time, fingerprint, uuid-clash, ranges, energy, load-power,
// health, coverage) and returns a [Report] with one finding per failure. A
// [FraudProof] (equivocation or double-lease) is self-contained evidence
// that a provider signed contradictory entries; [VerifyFraudProof] checks
// it without trusting the reporter. A [WrongResultProof] carries two
// providers' signed finished events for one deterministic job with
// different outputs, plus the job's spec, module and re-run bounds:
// [WrongResultProof.Claim] checks the claims, and [WrongResultClaim.Judge]
// settles them with the verifier's own re-run (which this package does
// not do: it runs nothing).
//
// Payload conventions: every payload is a CBOR map whose version lives under
// the key "v" (a Go field tagged `cbor:"v"`); money is integer micro-USD,
// times are Unix milliseconds, power mW, energy mJ and utilization basis
// points, so no floats ever reach the wire.
//
// The package is pure: no I/O and no clocks (times are passed in). It must
// not import p2p, store, node or auction (see DESIGN.md §3).
package attest
