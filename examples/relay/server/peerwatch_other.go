//go:build !linux

package server

import "net"

// peerWatcher is not available off Linux: gone clients are found by the
// keepalive sweep's failed writes.
type peerWatcher struct{}

func newPeerWatcher(gone func(*stream)) *peerWatcher { return nil }

func (w *peerWatcher) watch(s *stream, conn net.Conn) (uint64, error) { return 0, nil }

func (w *peerWatcher) unwatch(tok uint64, conn net.Conn) {}

func (w *peerWatcher) close() {}

func (w *peerWatcher) forget(tok uint64) {}
