package api

import "github.com/idlegrid/idlegrid/node/endpoint"

// EndpointRequest starts a service job's one endpoint over its replicas
// (POST /v1/jobs/{id}/endpoint).
type EndpointRequest struct {
	// Listen is the local address; empty means 127.0.0.1 and Port, and
	// port 0 picks a free one.
	Listen string `json:"listen,omitempty"`
	// Port is the container port, one of the spec's ports.
	Port uint16 `json:"port"`
}

// Endpoint is a service job's one local address, balanced over its
// replicas, with the service's stats and each replica's.
type Endpoint struct {
	Job      string            `json:"job"`
	Port     uint16            `json:"port"`
	Listen   string            `json:"listen"` // the bound local address
	Total    EndpointStats     `json:"total"`
	Replicas []EndpointReplica `json:"replicas"`
}

// EndpointStats are the endpoint's counts, latencies and tokens
// (endpoint.Stats), with what the leases' vouchers paid and that per
// million tokens served.
type EndpointStats struct {
	endpoint.Stats
	SpentUSD   float64 `json:"spent_usd"`
	USDPerMTok float64 `json:"usd_per_mtok"`
}

// EndpointReplica is one replica's stats; Live is false once it was
// replaced.
type EndpointReplica struct {
	Lease    string `json:"lease"`
	Slot     int    `json:"slot"`
	Provider string `json:"provider"`
	Live     bool   `json:"live"`
	EndpointStats
}
