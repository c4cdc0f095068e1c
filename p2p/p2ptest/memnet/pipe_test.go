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

// TestPipeReusesItsBuffer: once the reader has drained what was written,
// the next writes go into the same backing array, as a kernel socket's
// would; a new one per burst was garbage the production transports do
// not make.
func TestPipeReusesItsBuffer(t *testing.T) {
	a, b := newPipe()
	defer a.Close()
	defer b.Close()
	msg := make([]byte, 1500)
	got := make([]byte, len(msg))
	exchange := func() {
		if _, err := a.Write(msg[:700]); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Write(msg[700:]); err != nil {
			t.Fatal(err)
		}
		for read := 0; read < len(got); {
			n, err := b.Read(got[read:])
			if err != nil {
				t.Fatal(err)
			}
			read += n
		}
	}
	exchange() // the first burst makes the array
	if allocs := testing.AllocsPerRun(100, exchange); allocs != 0 {
		t.Fatalf("a drained pipe allocated %.1f times per burst, want 0", allocs)
	}
}

// TestPipeKeepsOrderAcrossPartialReads: reads smaller than the writes,
// interleaved with more writes, return every byte in order (the unread
// part moves to the front when the array would grow).
func TestPipeKeepsOrderAcrossPartialReads(t *testing.T) {
	a, b := newPipe()
	defer a.Close()
	defer b.Close()
	var next, want byte
	small := make([]byte, 7)
	for round := range 2000 {
		msg := make([]byte, 1+round%97)
		for i := range msg {
			msg[i] = next
			next++
		}
		if _, err := a.Write(msg); err != nil {
			t.Fatal(err)
		}
		n, err := b.Read(small)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range small[:n] {
			if c != want {
				t.Fatalf("round %d: read %d, want %d", round, c, want)
			}
			want++
		}
	}
}
