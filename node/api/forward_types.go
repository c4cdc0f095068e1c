package api

import "github.com/idlegrid/idlegrid/node/forward"

// ForwardRequest starts forwarding a local address to a service job's
// container port (POST /v1/jobs/{id}/forwards).
type ForwardRequest struct {
	// Listen is the local address; empty means 127.0.0.1 and Port, and
	// port 0 picks a free one.
	Listen string `json:"listen,omitempty"`
	// Port is the container port, one of the spec's ports.
	Port uint16 `json:"port"`
}

// Forward is one running forward of a renter's service job.
type Forward struct {
	Job    string       `json:"job"`
	Port   uint16       `json:"port"`
	Listen string       `json:"listen"` // the bound local address
	Stats  ForwardStats `json:"stats"`
}

// ForwardStats are a forward's counts and request latencies (for HTTP:
// the time to the first byte of each response), as the forwarder keeps
// them.
type ForwardStats = forward.Stats
