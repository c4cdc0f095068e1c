// Package attest is idlegrid's signed-record layer: the codec every record
// kind travels in, and (later) telemetry attestations, vouchers and receipts.
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
// Payload conventions: every payload is a CBOR map whose version lives under
// the key "v" (a Go field tagged `cbor:"v"`); money is integer micro-USD and
// times are Unix milliseconds, so no floats ever reach the wire.
//
// The package is pure: no I/O and no clocks. It must not import p2p, store or
// node (see DESIGN.md §3).
package attest
