package server

import (
	"errors"
	"net"
	"syscall"
)

// peerClosed reports whether the client has closed or reset conn, by
// peeking at its socket without blocking: a zero-byte read means the peer
// sent FIN. Data waiting to be read, or none, means it is still there.
func peerClosed(conn net.Conn) bool {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	gone := false
	var b [1]byte
	err = rc.Read(func(fd uintptr) bool {
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case err == nil:
			gone = n == 0
		case errors.Is(err, syscall.EAGAIN), errors.Is(err, syscall.EINTR):
		default:
			gone = true
		}
		return true
	})
	return gone || err != nil
}
