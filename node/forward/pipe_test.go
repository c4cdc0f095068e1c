package forward

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// TestPipeLimits: a tunnel past its byte limit is closed, and one that
// carries nothing for Idle is closed too.
func TestPipeLimits(t *testing.T) {
	cases := []struct {
		name string
		lim  Limits
		send []byte
		want error
	}{
		{"byte_limit", Limits{MaxBytes: 1000, Idle: time.Minute}, bytes.Repeat([]byte("x"), 4000), errTooMuch},
		{"idle", Limits{Idle: 200 * time.Millisecond}, nil, errIdle},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, aPeer := net.Pipe()
			b, bPeer := net.Pipe()
			defer aPeer.Close()
			defer bPeer.Close()
			go func() { _, _ = io.Copy(io.Discard, bPeer) }()
			go func() {
				if tc.send != nil {
					_, _ = aPeer.Write(tc.send)
				}
			}()
			done := make(chan error, 1)
			go func() { done <- pipe(context.Background(), a, b, tc.lim, nil) }()
			select {
			case err := <-done:
				if !errors.Is(err, tc.want) {
					t.Fatalf("pipe ended with %v, want %v", err, tc.want)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("pipe not closed")
			}
		})
	}
}

// TestPipeHalfClose: a side that closes its sending half still gets the
// whole answer, and the pipe then ends cleanly.
func TestPipeHalfClose(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // the service: reads the whole request, then answers
		c, err := ln.Accept()
		if err != nil {
			return
		}
		req, _ := io.ReadAll(c)
		_, _ = c.Write(append([]byte("got "), req...))
		_ = c.Close()
	}()
	svc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	cl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	go func() {
		local, err := cl.Accept()
		if err != nil {
			return
		}
		_ = pipe(context.Background(), local, svc, Limits{}, nil)
	}()
	c, err := net.Dial("tcp", cl.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _ = c.Write([]byte("ping"))
	_ = c.(*net.TCPConn).CloseWrite()
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "got ping" {
		t.Fatalf("answer %q, %v", got, err)
	}
}
