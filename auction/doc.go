// Package auction holds idlegrid's market records and the pure rules around
// them. This file set covers capacity advertising (DESIGN.md §5):
//
//   - [Capacity], the signed record a provider puts in the DHT at
//     [CapacityKey], sealed with [SealCapacity] and opened with
//     [OpenCapacity] (attest codec, 16 KiB limit, structural validation);
//   - [CapacityValidator], the DHT validator for the "idlegrid-cap"
//     namespace: signer == key owner, not expired, highest Seq wins;
//   - [CapabilityKeys] and [CapabilityCID], the content IDs of canonical
//     capability strings ("idlegrid:gpu:h100-80gb") a provider announces
//     with Provide so renters can find it without scanning the network.
//
// The package is pure: no I/O, and no clock of its own (validators take a
// clock function). It may import attest and nothing from p2p, store or node.
//
// Units: money is integer micro-USD (uUSD), prices are uUSD per GPU-hour,
// times are Unix milliseconds, and every field name carries its unit.
package auction
