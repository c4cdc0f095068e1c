// Package jobproto defines the messages of /idlegrid/job/1.0.0, the
// protocol over which a renter follows the work running on its leases and
// a provider fetches what it needs to run it.
//
// Every exchange is one request (Request, CBOR) answered by a stream of
// frames: first a Header (CBOR), then, for the operations that move bytes
// (logs, results, artifacts), raw data frames until the stream ends. The
// protocol rides authenticated libp2p streams, so messages are not signed;
// each side checks that the remote peer is the lease's other party.
//
// Decoders are strict (unknown fields, duplicate keys and trailing bytes
// are errors) and size-limited: peers are untrusted.
package jobproto
