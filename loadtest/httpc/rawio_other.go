//go:build !linux

package httpc

import "net"

// rawIO returns c: raw reads and writes are Linux's (see rawio_linux.go).
func rawIO(c net.Conn) net.Conn { return c }
