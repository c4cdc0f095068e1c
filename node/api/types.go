// Package api is the node's local HTTP API: JSON over loopback, guarded by
// a bearer token and by Host and Origin checks (DNS-rebinding defence), with
// one error type for every failure. The CLI, the tests and later the
// dashboard all use it through the typed client in api/client.
package api

import (
	"fmt"
	"time"
)

// Identity is GET /v1/id.
type Identity struct {
	PeerID  string   `json:"peer_id"`
	Role    string   `json:"role"`
	Version string   `json:"version"`
	Addrs   []string `json:"addrs"`
}

// Status is GET /v1/status.
type Status struct {
	Role    string `json:"role"`
	PeerID  string `json:"peer_id"`
	Version string `json:"version"`
	Ready   bool   `json:"ready"`
	// NotReady says why the node cannot do its job yet and what to do,
	// one line each; empty when it can.
	NotReady       []string  `json:"not_ready,omitempty"`
	StartedAt      time.Time `json:"started_at"`
	UptimeSeconds  float64   `json:"uptime_seconds"`
	ListenAddrs    []string  `json:"listen_addrs"`
	ObservedAddrs  []string  `json:"observed_addrs"`
	RoutingTable   int       `json:"routing_table_size"`
	ConnectedPeers int       `json:"connected_peers"`
	// TopicPeers is, per gossip topic, the connected peers subscribed to it.
	TopicPeers map[string]int `json:"topic_peers"`
	// Reachability says how other nodes reach this one.
	Reachability Reachability `json:"reachability"`
	// MarketView counts the providers in this node's market view (its
	// digest book, current digests only) by the evidence behind them
	// (docs/protocol.md §6.5): backed ones are what `market search`
	// shows, proven ones are backed and seen to bid, silent ones are
	// backed and left out of bid selection for now (they were expected to
	// bid and did not: in this renter's auctions, or absent from the
	// award summaries of RFQs whose always-bid prefix held them), held
	// ones wait for their record check.
	MarketView MarketView `json:"market_view"`
}

// MarketView is the size of a node's market view by evidence level.
type MarketView struct {
	Backed int `json:"backed"`
	Proven int `json:"proven"`
	Silent int `json:"silent"`
	Held   int `json:"held"`
}

// Reachability is how other nodes reach this one.
type Reachability struct {
	// State is public (dialable at a public address), relayed (behind a
	// NAT, reachable through relays; direct by hole punching where the
	// NATs allow), unreachable (behind a NAT with no relay: nobody can
	// connect in) or unknown (still checking, or p2p.nat off).
	State string `json:"state"`
	// Detail says it in a sentence.
	Detail      string   `json:"detail"`
	PublicAddrs []string `json:"public_addrs,omitempty"`
	Relays      []string `json:"relays,omitempty"`
	RelayAddrs  []string `json:"relay_addrs,omitempty"`
}

// Peer is one entry of GET /v1/peers: every connected peer, and every
// peer the node holds abuse points against or has banned, connected or
// not.
type Peer struct {
	ID        string   `json:"id"`
	Addrs     []string `json:"addrs"`
	Direction string   `json:"direction"`
	LatencyMs float64  `json:"latency_ms"`
	Agent     string   `json:"agent,omitempty"`
	Bootstrap bool     `json:"bootstrap"`
	// Idlegrid is true when the peer speaks our DHT or gossip protocol.
	Idlegrid  bool     `json:"idlegrid"`
	Protocols []string `json:"protocols,omitempty"`
	// Path is "direct", or the relay the peer is reached through, its
	// limits, and why hole punching did not connect directly.
	Path string `json:"path,omitempty"`

	// Connected: the peer has an open connection now.
	Connected bool `json:"connected"`
	// GossipScore is gossipsub's score of the peer, abuse included
	// (refreshed every second). Below -500 the node stops gossiping to it;
	// Graylisted (below -2500) means the node ignores its gossip.
	GossipScore float64 `json:"gossip_score"`
	Graylisted  bool    `json:"graylisted"`
	// AbusePoints are what the peer has been charged for abuse, decaying
	// by half every two minutes; LastAbuse is the reason of the latest
	// charge (gossip_reject, stream_idle, ...). 200 points ban a peer.
	AbusePoints float64 `json:"abuse_points"`
	LastAbuse   string  `json:"last_abuse,omitempty"`
	// Banned: refused until BannedUntil, for BanReason (kept across
	// restarts). Blocked: refused for good (a proven fraud).
	Banned      bool       `json:"banned"`
	BannedUntil *time.Time `json:"banned_until,omitempty"`
	BanReason   string     `json:"ban_reason,omitempty"`
	Blocked     bool       `json:"blocked"`
}

// GossipMessage is one message seen on a topic (debug endpoint).
type GossipMessage struct {
	Topic        string    `json:"topic"`
	From         string    `json:"from"`
	ReceivedFrom string    `json:"received_from"`
	Data         []byte    `json:"data"`
	ReceivedAt   time.Time `json:"received_at"`
}

// Error is the single error shape of the API:
// {"error": {"code": "...", "message": "..."}} with the HTTP status.
type Error struct {
	Status  int    `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string {
	return fmt.Sprintf("api: %s (%d %s)", e.Message, e.Status, e.Code)
}

// ErrorBody is the JSON envelope of an Error.
type ErrorBody struct {
	Error *Error `json:"error"`
}

// Error codes.
const (
	CodeUnauthorized     = "unauthorized"
	CodeForbidden        = "forbidden"
	CodeNotFound         = "not_found"
	CodeMethodNotAllowed = "method_not_allowed"
	CodeBadRequest       = "bad_request"
	CodeUnavailable      = "unavailable"
	CodeInternal         = "internal"
)

// Errorf builds an *Error.
func Errorf(status int, code, format string, a ...any) *Error {
	return &Error{Status: status, Code: code, Message: fmt.Sprintf(format, a...)}
}
