package memnet

import (
	"io"
	"net"
	"os"
	"sync"
	"time"
)

// socketBuffer is how many bytes one direction of a connection holds
// before a write waits for the reader, as a loopback TCP socket's send
// and receive buffers do. net.Pipe holds none: every write waits for the
// far end's read, so a busy reader stalls the writer's whole yamux
// session, its keepalives time out (yamux gives a write 10 s), and
// connections that TCP would have kept are closed.
const socketBuffer = 4 << 20

// newPipe returns the two ends of a buffered, in-memory, full-duplex
// connection with deadlines.
func newPipe() (net.Conn, net.Conn) {
	ab, ba := newBuffer(), newBuffer()
	a := &pipeEnd{in: ba, out: ab, readDL: newDeadline(), writeDL: newDeadline(), local: pipeAddr{}, remote: pipeAddr{}}
	b := &pipeEnd{in: ab, out: ba, readDL: newDeadline(), writeDL: newDeadline(), local: pipeAddr{}, remote: pipeAddr{}}
	return a, b
}

// keepBuffer is the most capacity a drained buffer keeps for the next
// writes. A kernel socket copies into buffers it already has; a new slice
// per burst made memnet's own writes 18 % of the bytes a 200-node run
// allocated, garbage the production transports do not make. A buffer a
// large burst grew past this is let go.
const keepBuffer = 64 << 10

// buffer is one direction: what the writer wrote and the reader has not
// read yet, buf[r:].
type buffer struct {
	mu   sync.Mutex
	buf  []byte
	r    int
	eof  bool // the writer closed: reads drain, then io.EOF
	gone bool // the reader closed: writes fail
	// readable and writable each hold a token when the state may have
	// changed for a reader or a writer; a waiter takes it and looks
	// again. One token wakes one waiter, who passes it on while there is
	// more for the next (data left, room left), and closing leaves one
	// there for good, as each waiter puts it back on its way out.
	readable, writable chan struct{}
}

func newBuffer() *buffer {
	return &buffer{readable: make(chan struct{}, 1), writable: make(chan struct{}, 1)}
}

// pending is how many bytes wait for the reader.
func (b *buffer) pending() int { return len(b.buf) - b.r }

// drained empties the buffer once the reader has it all, keeping a
// small backing array for the next writes.
func (b *buffer) drained() {
	if cap(b.buf) > keepBuffer {
		b.buf = nil
	} else {
		b.buf = b.buf[:0]
	}
	b.r = 0
}

// add appends data, moving what is unread to the front first when the
// backing array would otherwise grow.
func (b *buffer) add(data []byte) {
	if b.r > 0 && len(b.buf)+len(data) > cap(b.buf) {
		n := copy(b.buf, b.buf[b.r:])
		b.buf, b.r = b.buf[:n], 0
	}
	b.buf = append(b.buf, data...)
}

// signal leaves a token in ch unless one is there already.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// pipeEnd is one end of a pipe.
type pipeEnd struct {
	in, out         *buffer
	readDL, writeDL *deadline
	local, remote   net.Addr
	closeOnce       sync.Once
}

func (p *pipeEnd) Read(b []byte) (int, error) {
	if isClosed(p.readDL.wait()) {
		return 0, os.ErrDeadlineExceeded
	}
	for {
		p.in.mu.Lock()
		switch {
		case p.in.gone:
			p.in.mu.Unlock()
			signal(p.in.readable)
			return 0, net.ErrClosed
		case p.in.pending() > 0:
			n := copy(b, p.in.buf[p.in.r:])
			p.in.r += n
			if p.in.pending() == 0 {
				p.in.drained()
			} else {
				signal(p.in.readable)
			}
			signal(p.in.writable)
			p.in.mu.Unlock()
			return n, nil
		case p.in.eof:
			p.in.mu.Unlock()
			signal(p.in.readable)
			return 0, io.EOF
		}
		p.in.mu.Unlock()
		select {
		case <-p.in.readable:
		case <-p.readDL.wait():
			return 0, os.ErrDeadlineExceeded
		}
	}
}

func (p *pipeEnd) Write(b []byte) (int, error) {
	if isClosed(p.writeDL.wait()) {
		return 0, os.ErrDeadlineExceeded
	}
	written := 0
	for {
		p.out.mu.Lock()
		switch {
		case p.out.eof:
			p.out.mu.Unlock()
			signal(p.out.writable)
			return written, net.ErrClosed
		case p.out.gone:
			p.out.mu.Unlock()
			signal(p.out.writable)
			return written, io.ErrClosedPipe
		}
		if room := socketBuffer - p.out.pending(); room > 0 {
			n := min(room, len(b)-written)
			p.out.add(b[written : written+n])
			written += n
			signal(p.out.readable)
		}
		if written == len(b) {
			if p.out.pending() < socketBuffer {
				signal(p.out.writable)
			}
			p.out.mu.Unlock()
			return written, nil
		}
		p.out.mu.Unlock()
		select {
		case <-p.out.writable:
		case <-p.writeDL.wait():
			return written, os.ErrDeadlineExceeded
		}
	}
}

// Close ends both directions: the far end reads what was written, then
// io.EOF; its writes fail.
func (p *pipeEnd) Close() error {
	p.closeOnce.Do(func() {
		p.out.mu.Lock()
		p.out.eof = true
		signal(p.out.readable)
		signal(p.out.writable)
		p.out.mu.Unlock()
		p.in.mu.Lock()
		p.in.gone = true
		p.in.buf, p.in.r = nil, 0
		signal(p.in.writable)
		signal(p.in.readable)
		p.in.mu.Unlock()
	})
	return nil
}

func (p *pipeEnd) LocalAddr() net.Addr  { return p.local }
func (p *pipeEnd) RemoteAddr() net.Addr { return p.remote }

func (p *pipeEnd) SetDeadline(t time.Time) error {
	p.readDL.set(t)
	p.writeDL.set(t)
	return nil
}

func (p *pipeEnd) SetReadDeadline(t time.Time) error  { p.readDL.set(t); return nil }
func (p *pipeEnd) SetWriteDeadline(t time.Time) error { p.writeDL.set(t); return nil }

// pipeAddr is what net.Addr a pipe end reports; libp2p reads the
// multiaddrs memnet's conn wraps around it instead.
type pipeAddr struct{}

func (pipeAddr) Network() string { return "memnet" }
func (pipeAddr) String() string  { return "memnet" }

// deadline is a settable deadline whose wait channel is closed when it
// passes (as in net.Pipe). yamux sets a write deadline before every frame
// it writes and clears it after, so set allocates nothing in the common
// case: one timer, made once and re-armed, and a new channel only after a
// deadline passed. (A timer and closure per set were 1.3 % of a 200-node
// run's CPU, and more of its garbage collection.)
type deadline struct {
	mu     sync.Mutex
	timer  *time.Timer // fires d.fire; nil until the first deadline
	at     time.Time   // the deadline armed; zero: none
	passed chan struct{}
}

func newDeadline() *deadline { return &deadline{passed: make(chan struct{})} }

// set moves the deadline to t (zero: none).
func (d *deadline) set(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timer != nil {
		d.timer.Stop() // a firing already under way finds d.at moved
	}
	d.at = time.Time{}
	if isClosed(d.passed) {
		if !t.IsZero() && !time.Now().Before(t) {
			return // still passed
		}
		d.passed = make(chan struct{})
	}
	if t.IsZero() {
		return
	}
	dur := time.Until(t)
	if dur <= 0 {
		close(d.passed)
		return
	}
	d.at = t
	if d.timer == nil {
		d.timer = time.AfterFunc(dur, d.fire)
	} else {
		d.timer.Reset(dur)
	}
}

// fire closes the wait channel if the deadline armed has passed: a timer
// stopped too late to keep it from running finds another deadline, or
// none, and does nothing.
func (d *deadline) fire() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.at.IsZero() {
		return
	}
	if left := time.Until(d.at); left > 0 {
		d.timer.Reset(left) // early by the wall clock: a deadline without a monotonic reading
		return
	}
	d.at = time.Time{}
	if !isClosed(d.passed) {
		close(d.passed)
	}
}

// wait is closed once the deadline passes.
func (d *deadline) wait() chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.passed
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
