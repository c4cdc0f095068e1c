package p2p

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-msgio"
)

// TestTunnel: the handler gets the header and the raw stream both ways;
// a peer that sends no header within HeaderTimeout is cut and charged,
// and an over-long header is refused on both sides.
func TestTunnel(t *testing.T) {
	nodes := mockNet(t, 2, nil)
	a, b := nodes[1], nodes[0]
	const proto = "/idlegrid/test-tunnel/1.0.0"
	lim := TunnelLimits{MaxHeader: 16, HeaderTimeout: 300 * time.Millisecond}
	b.HandleTunnel(proto, "idlegrid.test", lim, func(_ context.Context, from peer.ID, hdr []byte, s io.ReadWriteCloser) error {
		if _, err := s.Write(append(hdr, ':')); err != nil {
			return err
		}
		_, err := io.Copy(s, s) // echo until the dialler half-closes
		return err
	})
	ctx := t.Context()
	waitFor(t, "connection", 20*time.Second, func() bool { return len(a.ConnectedPeers()) > 0 })
	s, err := a.OpenTunnel(ctx, b.ID(), proto, []byte("hi"), lim)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write([]byte("echo")); err != nil {
		t.Fatal(err)
	}
	_ = s.CloseWrite()
	got, err := io.ReadAll(s)
	if err != nil || string(got) != "hi:echo" {
		t.Fatalf("tunnel answered %q, %v", got, err)
	}
	_ = s.Close()

	if _, err := a.OpenTunnel(ctx, b.ID(), proto, bytes.Repeat([]byte("x"), 17), lim); err == nil {
		t.Error("OpenTunnel sent a header over MaxHeader")
	}
	// A raw stream that sends an over-long header, and one that sends none.
	for _, hdr := range [][]byte{bytes.Repeat([]byte("x"), 64), nil} {
		raw, err := a.host.NewStream(ctx, b.ID(), proto)
		if err != nil {
			t.Fatal(err)
		}
		if hdr != nil {
			_ = msgio.NewVarintWriter(raw).WriteMsg(hdr)
		}
		done := make(chan error, 1)
		go func() { _, err := io.ReadAll(raw); done <- err }()
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("header %d bytes: stream ended cleanly, want a reset", len(hdr))
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("header %d bytes: stream not cut", len(hdr))
		}
		_ = raw.Reset()
	}
	waitFor(t, "the oversize and the missing header charged", 10*time.Second, func() bool {
		for _, pa := range b.PeerAbuse() {
			if pa.ID == a.ID() && pa.AbusePoints > 0 && pa.LastAbuse == AbuseStreamIdle {
				return true
			}
		}
		return false
	})
}
