package mockupstream

import (
	"bytes"
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// How a slow call is held without holding a goroutine's worth of memory:
//
//   - The handler reads the request, draws its fate and hijacks the
//     connection. net/http's goroutine for the connection then ends, and
//     its bufio buffers become garbage: nothing of net/http is retained.
//   - A small goroutine (a [held]) sets a read deadline at the due time and
//     blocks in a 1-byte Read. Its stack stays at the 2 KiB minimum, and the
//     Read doubles as the detector of a client that gives up: EOF before
//     the deadline means the client left.
//   - At the deadline the held goroutine writes the raw HTTP/1.1 answer
//     and hands the connection back to the http.Server through the
//     [requeueListener], whose Accept returns requeued connections as well
//     as new ones, so keep-alive works as if net/http had answered.
//
// Bytes the client pipelined before the answer are kept and replayed by a
// [prefixConn].

// writeTimeout bounds writing one parked answer to a slow reader.
const writeTimeout = time.Minute

// smallAnswer is the body size up to which an answer is written without a
// write deadline: the loopback socket buffer takes it whole.
const smallAnswer = 64 << 10

// maxPipelined bounds the bytes kept from a client that sends more while
// its call is held.
const maxPipelined = 64 << 10

// held is one parked call.
type held struct {
	s       *Server
	conn    net.Conn
	kind    Kind
	draw    Draw
	rep     *reply
	start   time.Time
	close   bool        // the client asked to close after this answer
	pending []byte      // bytes the client sent after the request
	one     [1]byte     // read buffer of the close detector
	aborted atomic.Bool // set by Server.Close before it closes conn
}

// wait holds the call until due, then answers it (or resets, or hangs up).
func (h *held) wait(due time.Time) {
	defer h.s.untrack(h)
	c := h.conn
	_ = c.SetReadDeadline(due)
	var more []byte // read buffer once the client pipelines
	for {
		buf := h.one[:]
		if more != nil {
			buf = more
		}
		n, err := c.Read(buf)
		if n > 0 {
			h.pending = append(h.pending, buf[:n]...)
			if more == nil {
				more = make([]byte, 4<<10)
			}
			if len(h.pending) > maxPipelined && err == nil {
				err = errors.New("pipelined too much")
			}
		}
		if err == nil {
			continue
		}
		if errors.Is(err, os.ErrDeadlineExceeded) && !h.aborted.Load() {
			break
		}
		c.Close()
		switch {
		case h.aborted.Load():
			h.s.end(h.kind, Aborted, 0, h.start)
		case h.draw.Outcome == Hang:
			h.s.end(h.kind, Hang, 0, h.start) // the client gave up
		default:
			h.s.end(h.kind, ClientGone, 0, h.start)
		}
		return
	}
	// The read deadline is left in the past: the http.Server sets its own
	// before it reads the next request.
	switch h.draw.Outcome {
	case Hang: // MaxHang passed
		h.s.end(h.kind, Hang, 0, h.start)
		c.Close()
		return
	case Reset:
		h.s.end(h.kind, Reset, 0, h.start)
		resetConn(c)
		return
	}
	closeAfter := h.close || h.s.draining()
	body := h.rep.bodyLen()
	if h.rep.headOnly {
		body = 0
	}
	// Count before the last byte goes out, so a client that reads the
	// answer and then asks for stats sees it counted.
	h.s.end(h.kind, h.draw.Outcome, body, h.start)
	// A small answer fits the socket buffer and cannot block; a large one
	// to a slow reader is bounded by writeTimeout.
	bounded := body > smallAnswer
	if bounded {
		_ = c.SetWriteDeadline(time.Now().Add(writeTimeout))
	}
	n, err := h.rep.writeRaw(c, closeAfter)
	if err != nil || h.aborted.Load() {
		h.s.stats.undeliver(h.draw.Outcome, body-n)
		c.Close()
		return
	}
	if bounded {
		_ = c.SetWriteDeadline(time.Time{})
	}
	if closeAfter {
		c.Close()
		return
	}
	if len(h.pending) > 0 {
		c = newPrefixConn(c, h.pending)
	}
	h.s.ln.requeue(c)
}

// resetConn closes c so the peer reads a reset: SO_LINGER 0 makes close
// send RST instead of FIN.
func resetConn(c net.Conn) {
	raw := c
	for {
		u, ok := raw.(interface{ NetConn() net.Conn })
		if !ok {
			break
		}
		raw = u.NetConn()
	}
	if tc, ok := raw.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	c.Close()
}

// prefixConn is a connection whose first reads return bytes already read
// from it.
type prefixConn struct {
	net.Conn
	prefix []byte
}

func newPrefixConn(c net.Conn, prefix []byte) net.Conn {
	if p, ok := c.(*prefixConn); ok && len(p.prefix) > 0 {
		prefix = append(bytes.Clone(p.prefix), prefix...)
		c = p.Conn
	}
	return &prefixConn{Conn: c, prefix: bytes.Clone(prefix)}
}

// Read returns the kept bytes first, then reads the connection.
func (p *prefixConn) Read(b []byte) (int, error) {
	if len(p.prefix) > 0 {
		n := copy(b, p.prefix)
		p.prefix = p.prefix[n:]
		return n, nil
	}
	return p.Conn.Read(b)
}

// NetConn returns the underlying connection.
func (p *prefixConn) NetConn() net.Conn { return p.Conn }

// requeueListener is a net.Listener whose Accept returns both newly
// accepted connections and connections handed back after a parked answer,
// so the http.Server serves their next request as usual.
type requeueListener struct {
	inner net.Listener
	conns chan net.Conn
	errc  chan error
	done  chan struct{}
	once  sync.Once
}

func newRequeueListener(l net.Listener) *requeueListener {
	rl := &requeueListener{inner: l, conns: make(chan net.Conn), errc: make(chan error, 1), done: make(chan struct{})}
	go rl.acceptLoop()
	return rl
}

// acceptLoop accepts new connections until the listener closes, backing off
// on temporary errors (out of file descriptors) as http.Server does.
func (l *requeueListener) acceptLoop() {
	var backoff time.Duration
	for {
		c, err := l.inner.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || isTemporary(err) {
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				select {
				case <-time.After(backoff):
					continue
				case <-l.done:
					return
				}
			}
			l.errc <- err
			return
		}
		backoff = 0
		select {
		case l.conns <- c:
		case <-l.done:
			c.Close()
			return
		}
	}
}

func isTemporary(err error) bool {
	t, ok := errors.AsType[interface {
		error
		Temporary() bool
	}](err)
	return ok && t.Temporary()
}

// Accept returns the next new or requeued connection.
func (l *requeueListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case err := <-l.errc:
		return nil, err
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// requeue hands c back to Accept, or closes it if the listener is closed.
func (l *requeueListener) requeue(c net.Conn) {
	select {
	case <-l.done:
		c.Close()
		return
	default:
	}
	select {
	case l.conns <- c:
	case <-l.done:
		c.Close()
	}
}

// Close stops accepting; requeued connections are closed from then on.
func (l *requeueListener) Close() error {
	var err error
	l.once.Do(func() {
		close(l.done)
		err = l.inner.Close()
	})
	return err
}

// Addr returns the inner listener's address.
func (l *requeueListener) Addr() net.Addr { return l.inner.Addr() }
