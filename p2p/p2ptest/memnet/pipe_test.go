package memnet

import (
	"net"
	"testing"

	"golang.org/x/net/nettest"
)

// TestPipeIsANetConn runs x/net's conformance suite for net.Conn
// (ordering, concurrent use, deadlines, close semantics) on memnet's
// buffered pipe.
func TestPipeIsANetConn(t *testing.T) {
	nettest.TestConn(t, func() (c1, c2 net.Conn, stop func(), err error) {
		c1, c2 = newPipe()
		return c1, c2, func() { _ = c1.Close(); _ = c2.Close() }, nil
	})
}

// TestPipeBuffersWrites: a write up to the socket buffer returns before
// the far end reads (net.Pipe would block), and the reader gets every
// byte in order.
func TestPipeBuffersWrites(t *testing.T) {
	a, b := newPipe()
	defer a.Close()
	defer b.Close()
	msg := make([]byte, socketBuffer)
	for i := range msg {
		msg[i] = byte(i % 251)
	}
	if n, err := a.Write(msg); n != len(msg) || err != nil {
		t.Fatalf("write = %d, %v", n, err)
	}
	got := make([]byte, len(msg))
	for read := 0; read < len(got); {
		n, err := b.Read(got[read:])
		if err != nil {
			t.Fatal(err)
		}
		read += n
	}
	for i := range got {
		if got[i] != msg[i] {
			t.Fatalf("byte %d = %d, want %d", i, got[i], msg[i])
		}
	}
}
