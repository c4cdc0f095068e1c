// Package auction holds idlegrid's market records and the pure rules around
// them. This file set covers capacity advertising (DESIGN.md §5):
//
//   - [Capacity], the signed record a provider puts in the DHT at
//     [CapacityKey], sealed with [SealCapacity] and opened with
//     [OpenCapacity] (attest codec, 16 KiB limit, structural validation);
//   - [CapacityValidator], the DHT validator for the "idlegrid-cap"
//     namespace: signer == key owner, not expired, highest Seq wins;
//   - [CapabilityKeys] and [CapabilityCID], the content IDs a provider
//     announces with Provide ("idlegrid:provider" and its datasets) so
//     renters can list the market and find cached data.
//
// The reverse auction (DESIGN.md §6) has one signed message kind per step:
// [RFQ], [Bid], [Award], [LeaseAcceptance], [Decline], [PreemptNotice] and
// [AwardSummary]. Each has a Validate method that reports every structural
// problem with its field path, a Seal function that refuses a key other
// than the author's, and an Open function that applies the kind's size
// limit, validates, and returns [ErrNotOwner] when the signer is not the
// peer the message names. [SeenCache] is the bounded replay guard for
// message IDs. A [JobSpec] is the renter's YAML (or flags): [ParseJobSpec]
// is strict and reports every problem with its line, [JobSpec.CID] names
// the normalized spec and [JobSpec.RFQ] turns it into a request for quotes.
//
// The package is pure: no I/O, and no clock of its own (validators take a
// clock function). It may import attest and nothing from p2p, store or node.
//
// Units: money is integer micro-USD (uUSD), prices are uUSD per GPU-hour,
// times are Unix milliseconds, and every field name carries its unit.
package auction
