package node

import (
	"time"

	"github.com/idlegrid/idlegrid/attest/reputation"
)

// heartbeatEvery is how often a provider sends its heartbeat (one signed
// telemetry entry per window).
func heartbeatEvery(c Config) time.Duration { return c.Attest.Window }

func (n *Node) receiptEvidence() []reputation.Receipt { return nil }
func (n *Node) fraudEvidence() []reputation.Fraud     { return nil }
