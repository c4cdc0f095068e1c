package p2p

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/client"
	"github.com/libp2p/go-libp2p/p2p/protocol/holepunch"
)

// ErrRelayOnly is wrapped by a *RelayOnlyError: the peer is connected only
// through a relay whose circuits are limited, and no direct connection
// came up, so an exchange that needs more than signalling cannot run.
var ErrRelayOnly = errors.New("reachable only through a limited relay")

// RelayOnlyError explains why an exchange with a peer connected only
// through a limited relay failed: the relay, its limits, and what hole
// punching did.
type RelayOnlyError struct {
	Peer  peer.ID
	Relay peer.ID
	// LimitDuration and LimitBytes are the relay's circuit limits.
	LimitDuration time.Duration
	LimitBytes    int64
	// Punch is the last hole-punch outcome with the peer (zero: none
	// recorded, typically when this node has no public address to punch
	// from).
	Punch PunchOutcome
	// Err is the error of the stream that could not open.
	Err error
}

func (e *RelayOnlyError) Error() string {
	why := "no hole punch was attempted (one side has no public address to punch from yet)"
	switch {
	case e.Punch.Err != "":
		why = fmt.Sprintf("hole punching failed after %d attempt(s) (%s): one side is likely behind a NAT that maps each destination to a new port (symmetric), which needs a public address or a forwarded port", e.Punch.Attempts, oneLine(e.Punch.Err))
	case !e.Punch.At.IsZero() && e.Punch.Success:
		why = "a direct connection came up earlier but is gone"
	}
	limits := "limited circuits"
	if e.LimitDuration > 0 || e.LimitBytes > 0 {
		limits = fmt.Sprintf("circuits limited to %s and %d KiB", e.LimitDuration, e.LimitBytes>>10)
	}
	return fmt.Sprintf("peer %s is %s %s (%s) and no direct connection came up: %s (%v)",
		shortID(e.Peer), ErrRelayOnly, shortID(e.Relay), limits, why, e.Err)
}

func (e *RelayOnlyError) Unwrap() []error { return []error{ErrRelayOnly, e.Err} }

// openStream opens a stream to p. Small exchanges (allowRelay, from
// StreamLimits.OverLimitedRelay) may run over a relayed connection whose
// relay limits circuits; the rest wait, until ctx ends, for a direct
// connection (or one through an unlimited relay), which hole punching
// brings up where the NATs allow. A stream that could not open only
// because the peer is behind a limited relay fails with a
// *RelayOnlyError that says so.
func (n *Node) openStream(ctx context.Context, p peer.ID, allowRelay bool, protos ...protocol.ID) (network.Stream, error) {
	if allowRelay {
		ctx = network.WithAllowLimitedConn(ctx, "small exchange")
	}
	s, err := n.host.NewStream(ctx, p, protos...)
	if err != nil {
		return nil, n.explainNoDirect(p, err)
	}
	return s, nil
}

// explainNoDirect turns err into a *RelayOnlyError when every connection
// to p is a limited relayed one.
func (n *Node) explainNoDirect(p peer.ID, err error) error {
	e, direct, limited := n.relayed(p)
	if e == nil || direct || !limited {
		return err
	}
	e.Err = err
	return e
}

// pathOf says how this node is connected to p: "direct" when any
// connection is, else through which relay, with what limits, and what
// hole punching did.
func (n *Node) pathOf(p peer.ID) string {
	e, direct, limited := n.relayed(p)
	switch {
	case e == nil:
		return ""
	case direct:
		return "direct"
	}
	path := "relayed through " + shortID(e.Relay)
	if limited {
		path += fmt.Sprintf(" (limited to %s and %d KiB per circuit)", e.LimitDuration, e.LimitBytes>>10)
	}
	if e.Punch.Err != "" {
		path += fmt.Sprintf("; hole punching failed after %d attempt(s): %s", e.Punch.Attempts, oneLine(e.Punch.Err))
	}
	return path
}

// relayed describes this node's connections to p (nil when there are
// none): whether one is direct, else the relay carrying them, its circuit
// limits when it has some (limited), and the last hole punch with p.
func (n *Node) relayed(p peer.ID) (e *RelayOnlyError, direct, limited bool) {
	conns := n.host.Network().ConnsToPeer(p)
	if len(conns) == 0 {
		return nil, false, false
	}
	e = &RelayOnlyError{Peer: p, Punch: n.punches.last(p)}
	for _, c := range conns {
		if !isCircuit(c.RemoteMultiaddr()) {
			return e, true, false
		}
		if id, err := relayOf(c.RemoteMultiaddr()); err == nil {
			e.Relay = id
		}
		st := c.Stat()
		limited = limited || st.Limited
		if d, ok := st.Extra[client.StatLimitDuration].(time.Duration); ok {
			e.LimitDuration = d
		}
		if b, ok := st.Extra[client.StatLimitData].(uint64); ok {
			e.LimitBytes = int64(b)
		}
	}
	return e, false, limited
}

// oneLine folds libp2p's multi-line dial errors ("all dials failed\n  *
// [addr] reason") into one line of at most 300 bytes.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(strings.ReplaceAll(s, "\n  * ", " | ")), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// PunchOutcome is the last hole-punch result with one peer.
type PunchOutcome struct {
	At       time.Time
	Success  bool
	Attempts int
	// Err is the last attempt's error ("" on success).
	Err string
}

// maxPunchPeers bounds the peers whose hole-punch outcome is kept.
const maxPunchPeers = 256

// punchLog keeps the latest hole-punch outcome per peer (bounded: the
// oldest is dropped), so that a missing direct connection can be
// explained, and counts outcomes. It is libp2p's hole-punch event tracer.
type punchLog struct {
	log     *slog.Logger
	outcome func(success bool)

	mu     sync.Mutex
	byPeer map[peer.ID]PunchOutcome
}

func newPunchLog(log *slog.Logger, outcome func(bool)) *punchLog {
	return &punchLog{log: log, outcome: outcome, byPeer: map[peer.ID]PunchOutcome{}}
}

// Trace implements holepunch.EventTracer.
func (l *punchLog) Trace(evt *holepunch.Event) {
	switch e := evt.Evt.(type) {
	case *holepunch.HolePunchAttemptEvt:
		l.update(evt.Remote, func(o *PunchOutcome) { o.Attempts = e.Attempt })
	case *holepunch.EndHolePunchEvt:
		l.update(evt.Remote, func(o *PunchOutcome) { o.Success, o.Err = e.Success, e.Error })
		l.log.Debug("hole punch", "peer", evt.Remote, "success", e.Success, "took", e.EllapsedTime, "err", e.Error)
		l.outcome(e.Success)
	case *holepunch.DirectDialEvt:
		if e.Success {
			l.update(evt.Remote, func(o *PunchOutcome) { o.Success, o.Err = true, "" })
		}
	case *holepunch.ProtocolErrorEvt:
		l.update(evt.Remote, func(o *PunchOutcome) { o.Success, o.Err = false, e.Error })
		l.log.Debug("hole punch protocol error", "peer", evt.Remote, "err", e.Error)
		l.outcome(false)
	}
}

func (l *punchLog) update(p peer.ID, f func(*PunchOutcome)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	o, ok := l.byPeer[p]
	if !ok && len(l.byPeer) >= maxPunchPeers {
		var oldest peer.ID
		for id, x := range l.byPeer {
			if oldest == "" || x.At.Before(l.byPeer[oldest].At) {
				oldest = id
			}
		}
		delete(l.byPeer, oldest)
	}
	o.At = time.Now()
	f(&o)
	l.byPeer[p] = o
}

// tally counts the peers whose last hole punch connected and those whose
// last one failed, with the latest failure's error.
func (l *punchLog) tally() (direct, failed int, lastErr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var at time.Time
	for _, o := range l.byPeer {
		switch {
		case o.Success:
			direct++
		case o.Err != "":
			failed++
			if o.At.After(at) {
				at, lastErr = o.At, o.Err
			}
		}
	}
	return direct, failed, lastErr
}

func (l *punchLog) last(p peer.ID) PunchOutcome {
	if l == nil {
		return PunchOutcome{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.byPeer[p]
}
