package p2p_test

import (
	"context"
	"testing"
	"time"

	"github.com/idlegrid/idlegrid/p2p"
	"github.com/idlegrid/idlegrid/p2p/p2ptest/hostile"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/prometheus/client_golang/prometheus"
)

// metricValue sums the samples of a counter or gauge whose labels include
// want.
func metricValue(t testing.TB, g prometheus.Gatherer, name string, want map[string]string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if labels[k] != v {
					continue metric
				}
			}
			if c := m.GetCounter(); c != nil {
				sum += c.GetValue()
			}
			if ga := m.GetGauge(); ga != nil {
				sum += ga.GetValue()
			}
		}
	}
	return sum
}

const (
	echoProto   protocol.ID = "/idlegrid/test/echo/1"
	framesProto protocol.ID = "/idlegrid/test/frames/1"
)

var (
	echoLimits   = p2p.StreamLimits{MaxRequest: 1 << 10, MaxResponse: 1 << 10, Timeout: 30 * time.Second, HeaderTimeout: time.Second, MaxPerPeer: 4}
	framesLimits = p2p.FrameLimits{MaxRequest: 1 << 10, MaxFrame: 1 << 10, Idle: 30 * time.Second, HeaderTimeout: time.Second, MaxPerPeer: 4}
)

// TestStreamAbuseIsCutAndBounded: idle, garbage, oversized and slowloris
// streams on a request/response and a framed protocol are cut within the
// header deadline, never more than the per-peer cap are served at once,
// the abuser is charged and ends banned, and an honest peer's requests
// keep being answered.
func TestStreamAbuseIsCutAndBounded(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	reg := prometheus.NewRegistry()
	victim := realNode(t, nil, p2p.Deps{Registerer: reg})
	honest := realNode(t, nil, p2p.Deps{})
	victim.HandleRequests(echoProto, "idlegrid.test", echoLimits, func(_ context.Context, _ peer.ID, req []byte) ([]byte, error) {
		return req, nil
	})
	victim.HandleFrames(framesProto, "idlegrid.test", framesLimits, func(_ context.Context, _ peer.ID, req []byte, send func([]byte) error) error {
		return send(req)
	})
	a := attacker(t)
	if err := a.Connect(ctx, addrInfo(victim)); err != nil {
		t.Fatal(err)
	}
	if err := honest.Host().Connect(ctx, addrInfo(victim)); err != nil {
		t.Fatal(err)
	}
	ask := func() {
		t.Helper()
		resp, err := honest.Request(ctx, victim.ID(), echoProto, []byte("hello"), echoLimits)
		if err != nil || string(resp) != "hello" {
			t.Fatalf("honest request: %q, %v", resp, err)
		}
	}
	ask()

	for _, proto := range []protocol.ID{echoProto, framesProto} {
		// Twelve idle streams: the handler serves at most four at once, the
		// rest are refused on arrival, and the four are cut by the header
		// deadline.
		idle, _, err := a.IdleStreams(ctx, victim.ID(), proto, 12)
		if err != nil {
			t.Fatalf("%s: open idle streams: %v", proto, err)
		}
		if _, fromPeer := victim.InboundStreams(proto, a.ID()); fromPeer > 4 {
			t.Fatalf("%s: %d streams served for one peer, cap 4", proto, fromPeer)
		}
		for i, s := range idle {
			if !hostile.StreamCut(s, 30*time.Second) {
				t.Fatalf("%s: idle stream %d was not cut", proto, i)
			}
		}
		refusals := func(reason string) float64 {
			return metricValue(t, reg, "idlegrid_p2p_stream_refusals_total", map[string]string{"protocol": string(proto), "reason": reason})
		}
		if got := refusals(p2p.RefusedPeerCap); got != 8 {
			t.Fatalf("%s: %v streams refused at the per-peer cap, want 8", proto, got)
		}
		eventually(t, "four streams counted as cut at the header deadline", func() bool {
			return refusals(p2p.RefusedHeaderTimeout) == 4
		})
		eventually(t, "idle streams released", func() bool {
			_, fromPeer := victim.InboundStreams(proto, a.ID())
			return fromPeer == 0
		})
		ask()
	}

	// A lying length prefix and garbage are cut at once.
	s, err := a.Write(ctx, victim.ID(), echoProto, hostile.HugeLength())
	if err != nil {
		t.Fatal(err)
	}
	if !hostile.StreamCut(s, 30*time.Second) {
		t.Fatal("a 1 TiB length prefix was not cut")
	}
	// Slowloris: a 500-byte request dribbled at 20 bytes/s would take 25 s.
	done, cut, err := a.Slowloris(ctx, victim.ID(), framesProto, 500, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	<-done
	if !cut() {
		t.Fatal("the slowloris stream was not cut")
	}
	if pts := victim.Guard().Points(a.ID()); pts == 0 && !victim.Blocked(a.ID()) {
		t.Fatal("stream abuse cost nothing")
	}
	ask()

	// An abuser that keeps at it ends banned and refused.
	for !victim.Blocked(a.ID()) {
		if _, _, err := a.IdleStreams(ctx, victim.ID(), echoProto, 12); err != nil {
			break // refused: the victim cut the connection
		}
	}
	eventually(t, "abuser banned", func() bool { return victim.Blocked(a.ID()) })
	eventually(t, "abuser disconnected", func() bool { return !a.Connected(victim.ID()) })
	ask()
	if pa := abuseOf(victim, honest.ID()); pa.AbusePoints != 0 || pa.Banned {
		t.Fatalf("honest peer penalised: %+v", pa)
	}
}
