package httpc

import (
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"
)

// rawConn is a TCP connection whose reads and writes are raw system calls
// on the non-blocking socket, through its syscall.RawConn. The net package
// makes each one a blocking system call in the runtime's eyes (entering
// and leaving it costs as much as a short call itself), and a write to
// loopback runs long enough — the kernel delivers the segment to the
// server on the spot — that the runtime's monitor takes the processor
// away from the thread in it and wakes another: thread switches, futex
// wake-ups and sleeps, per request, that the net package pays for calls
// that never block. Here a call that would block returns EAGAIN as before,
// and the goroutine waits in the network poller, deadlines and closing
// included, as the net package's own reads and writes do.
type rawConn struct {
	*net.TCPConn
	rc syscall.RawConn

	// The call in progress, for the functions below, made once: a read or
	// a write allocates nothing. Reads and writes may run at once (one of
	// each).
	rbuf    []byte
	rn      int
	rerr    error
	readFn  func(fd uintptr) bool
	wbuf    []byte
	wn      int
	werr    error
	writeFn func(fd uintptr) bool
	// sendFn is send's: it writes wbuf on its first call, inside a read.
	sendFn func(fd uintptr) bool
	sent   bool
}

// rawIO wraps a plain TCP connection; any other is returned as is.
func rawIO(c net.Conn) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	r := &rawConn{TCPConn: tc, rc: rc}
	r.readFn, r.writeFn, r.sendFn = r.read, r.write, r.sendThenWait
	return r
}

// send writes p, a request, and waits until the answer can be read,
// without the read the net package tries first — after a request has
// just gone out, it finds nothing and fails with EAGAIN before almost
// every answer: a system call per request for nothing. The write is made
// inside the wait for readability, after the poller has forgotten any
// earlier readiness, so the answer's arrival cannot be missed: it comes
// after the request. (A wait begun after the write could miss it.) It
// returns the bytes written; fewer than len(p) with a nil error when the
// socket had no room for all of them, and the caller writes the rest.
func (r *rawConn) send(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	r.wbuf, r.wn, r.werr, r.sent = p, 0, nil, false
	err := r.rc.Read(r.sendFn)
	r.wbuf = nil
	if err == nil {
		err = r.werr
	}
	if err != nil {
		op := "read"
		if r.werr != nil {
			op = "write"
		}
		err = r.opError(op, err)
	}
	return r.wn, err
}

// sendThenWait is send's read function: on its first call it writes, and
// asks to wait for readability when the whole request went out; on the
// next, the answer (or the end of the connection) can be read.
func (r *rawConn) sendThenWait(fd uintptr) bool {
	if r.sent {
		return true
	}
	r.sent = true
	if !r.write(fd) || r.werr != nil {
		return true // the socket is full, or the write failed: back to the caller
	}
	return false
}

func (r *rawConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	r.rbuf, r.rn, r.rerr = p, 0, nil
	err := r.rc.Read(r.readFn)
	r.rbuf = nil
	if err == nil {
		err = r.rerr
	}
	if err != nil && err != io.EOF {
		err = r.opError("read", err)
	}
	return r.rn, err
}

// read is the RawConn's read function: false to wait for readability.
func (r *rawConn) read(fd uintptr) bool {
	for {
		n, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&r.rbuf[0])), uintptr(len(r.rbuf)))
		switch {
		case e == syscall.EINTR:
			continue
		case e == syscall.EAGAIN:
			return false
		case e != 0:
			r.rerr = os.NewSyscallError("read", e)
		case n == 0:
			r.rerr = io.EOF
		default:
			r.rn = int(n)
		}
		return true
	}
}

func (r *rawConn) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	r.wbuf, r.wn, r.werr = p, 0, nil
	err := r.rc.Write(r.writeFn)
	r.wbuf = nil
	if err == nil {
		err = r.werr
	}
	if err != nil {
		err = r.opError("write", err)
	}
	return r.wn, err
}

// opError names the connection in err, as the net package's errors do.
func (r *rawConn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: "tcp", Source: r.LocalAddr(), Addr: r.RemoteAddr(), Err: err}
}

// write is the RawConn's write function: false to wait for writability
// with bytes left to write.
func (r *rawConn) write(fd uintptr) bool {
	for r.wn < len(r.wbuf) {
		rest := r.wbuf[r.wn:]
		n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&rest[0])), uintptr(len(rest)))
		switch {
		case e == syscall.EINTR:
			continue
		case e == syscall.EAGAIN:
			return false
		case e != 0:
			r.werr = os.NewSyscallError("write", e)
			return true
		}
		r.wn += int(n)
	}
	return true
}
