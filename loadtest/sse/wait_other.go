//go:build !linux

package sse

import "net"

// waiter waits for data on Linux only (see wait_linux.go); elsewhere the
// stream blocks in Read.
type waiter struct {
	tls bool
}

func newWaiter(net.Conn) *waiter { return nil }

func (w *waiter) wait() error { return nil }
