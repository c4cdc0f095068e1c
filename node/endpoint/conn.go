package endpoint

import (
	"io"
	"net"
	"time"
)

// StreamConn makes a stream (a libp2p tunnel) a net.Conn for the
// endpoint's HTTP client: deadlines pass to the stream when it has them.
func StreamConn(rwc io.ReadWriteCloser) net.Conn { return streamConn{rwc} }

type streamConn struct{ io.ReadWriteCloser }

type streamAddr struct{}

func (streamAddr) Network() string { return "tunnel" }
func (streamAddr) String() string  { return "tunnel" }

func (streamConn) LocalAddr() net.Addr  { return streamAddr{} }
func (streamConn) RemoteAddr() net.Addr { return streamAddr{} }

func (c streamConn) SetDeadline(t time.Time) error {
	if d, ok := c.ReadWriteCloser.(interface{ SetDeadline(time.Time) error }); ok {
		return d.SetDeadline(t)
	}
	return nil
}

func (c streamConn) SetReadDeadline(t time.Time) error {
	if d, ok := c.ReadWriteCloser.(interface{ SetReadDeadline(time.Time) error }); ok {
		return d.SetReadDeadline(t)
	}
	return nil
}

func (c streamConn) SetWriteDeadline(t time.Time) error {
	if d, ok := c.ReadWriteCloser.(interface{ SetWriteDeadline(time.Time) error }); ok {
		return d.SetWriteDeadline(t)
	}
	return nil
}
