//go:build !linux

package httpc

import "net"

// rawIO returns c: raw reads and writes are Linux's (see rawio_linux.go).
func rawIO(c net.Conn) net.Conn { return c }

// rawConn is Linux's (see rawio_linux.go).
type rawConn struct{ net.Conn }

func (r *rawConn) send(p []byte) (int, error) { return r.Write(p) }
