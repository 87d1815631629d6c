package sse

import (
	"crypto/tls"
	"net"
	"syscall"
)

// waiter waits until a connection's socket has something to read — bytes,
// the end of the stream or an error — without reading it, honouring the
// connection's read deadline. It parks the stream's goroutine in the
// runtime's poller a few small frames deep, where a blocked Read (through
// TLS, a dozen frames) would hold a larger stack on every idle stream.
type waiter struct {
	rc    syscall.RawConn
	tls   bool // the connection is TLS: it may hold records the socket no longer shows
	ready func(fd uintptr) bool
	peek  [1]byte
}

// newWaiter returns a waiter for conn, or nil when conn (or the connection
// under its TLS) is not a socket the stream can wait on.
func newWaiter(conn net.Conn) *waiter {
	w := &waiter{}
	if tc, ok := conn.(*tls.Conn); ok {
		conn, w.tls = tc.NetConn(), true
	}
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	w.rc = rc
	w.ready = w.readable
	return w
}

// readable reports whether the socket has something to read: a byte
// (peeked, not taken), the end of the stream or an error, which the read
// that follows returns. Only "nothing yet" (EAGAIN) makes the poller wait.
func (w *waiter) readable(fd uintptr) bool {
	_, _, err := syscall.Recvfrom(int(fd), w.peek[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	return err != syscall.EAGAIN
}

// wait returns once the socket is readable; a deadline passed or the
// connection closed is an error, as for Read.
func (w *waiter) wait() error { return w.rc.Read(w.ready) }
