package p2p

import (
	"maps"
	"strings"
	"sync"

	lpyamux "github.com/libp2p/go-libp2p/p2p/muxer/yamux"
	"github.com/libp2p/go-yamux/v5"
)

// Kinds of stream muxer failure, the label values of the muxer failures
// metric. yamux closes a connection itself when a keep-alive ping goes
// unanswered for its write timeout (10 s) or a read fails; libp2p throws
// its reports away, so such closes would count only as remote_or_network.
const (
	MuxerKeepAlive = "keepalive_timeout"
	MuxerRead      = "read_failed"
	MuxerGoAway    = "go_away_error"
	MuxerOther     = "other"
)

// muxerFailures counts yamux's log lines by kind. yamux writes one line
// per Printf.
type muxerFailures struct {
	mu     sync.Mutex
	counts map[string]uint64
	count  func(kind string) // the metric; nil counts only here
}

func (m *muxerFailures) Write(b []byte) (int, error) {
	line := string(b)
	kind := MuxerOther
	switch {
	case strings.Contains(line, "keepalive failed"):
		kind = MuxerKeepAlive
	case strings.Contains(line, "Failed to read"):
		kind = MuxerRead
	case strings.Contains(line, "go away"):
		kind = MuxerGoAway
	}
	m.mu.Lock()
	if m.counts == nil {
		m.counts = map[string]uint64{}
	}
	m.counts[kind]++
	m.mu.Unlock()
	if m.count != nil {
		m.count(kind)
	}
	return len(b), nil
}

// yamuxTransport is libp2p's yamux settings with the log counted.
func yamuxTransport(failures *muxerFailures) *lpyamux.Transport {
	cfg := *(*yamux.Config)(lpyamux.DefaultTransport)
	cfg.LogOutput = failures
	return (*lpyamux.Transport)(&cfg)
}

// MuxerFailures is how often yamux reported a failed connection, by kind
// (the Muxer constants).
func (n *Node) MuxerFailures() map[string]uint64 {
	n.muxer.mu.Lock()
	defer n.muxer.mu.Unlock()
	return maps.Clone(n.muxer.counts)
}
