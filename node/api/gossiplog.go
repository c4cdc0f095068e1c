package api

import (
	"fmt"
	"slices"
	"sync"
	"time"
)

// GossipLog keeps the last messages a node received per topic, for the
// debug endpoint (/v1/debug/gossip) and tests.
type GossipLog struct {
	mu   sync.Mutex
	size int
	msgs map[string][]GossipMessage
}

// NewGossipLog keeps size messages per topic.
func NewGossipLog(size int) *GossipLog {
	return &GossipLog{size: size, msgs: map[string][]GossipMessage{}}
}

// Add records a message received now.
func (g *GossipLog) Add(topic string, from, receivedFrom fmt.Stringer, data []byte) {
	g.mu.Lock()
	defer g.mu.Unlock()
	l := append(g.msgs[topic], GossipMessage{
		Topic: topic, From: from.String(), ReceivedFrom: receivedFrom.String(),
		Data: data, ReceivedAt: time.Now().UTC(),
	})
	if len(l) > g.size {
		l = slices.Delete(l, 0, len(l)-g.size)
	}
	g.msgs[topic] = l
}

// Recent returns a topic's kept messages, oldest first.
func (g *GossipLog) Recent(topic string) []GossipMessage {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.msgs[topic])
}
