// Package forward carries TCP connections to a service job's container
// over libp2p: the protocol /idlegrid/forward/1.0.0 (docs/protocol.md).
//
// The renter's Forwarder listens on a local address and, for each
// connection it accepts, opens a tunnel to the lease's provider: a framed
// Header (lease ID, container port), the provider's one-frame Reply, then
// raw bytes both ways until either side closes. The provider's Server
// authorises the tunnel (the lease's renter, or a peer the spec names),
// dials the container's port on the address its executor gives and copies
// bytes under a rate and an idle limit. The Forwarder measures, per
// request, the time from the client's request to the first byte of the
// answer (for HTTP/1.x, the time to first byte), and keeps counts.
package forward
