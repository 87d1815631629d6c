package sse

import (
	"context"
	"io"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGroup_ClosedStreamsLeave: a group serving users that come and go
// keeps only its open streams.
func TestGroup_ClosedStreamsLeave(t *testing.T) {
	dial := func(ctx context.Context, addr string, secure bool, serverName string) (net.Conn, error) {
		c, s := net.Pipe()
		go func() { _, _ = io.Copy(io.Discard, s) }()
		return c, nil
	}
	g, err := NewGroup(Config{URL: "http://127.0.0.1:9/events", Dial: dial})
	require.NoError(t, err)
	var open []*Stream
	for range 5 {
		open = append(open, g.Open(t.Context()))
	}
	for _, s := range open[:3] {
		s.Close()
	}
	g.mu.Lock()
	n := len(g.streams)
	g.mu.Unlock()
	require.Equal(t, 2, n, "three of five streams closed")
	g.Close()
	g.mu.Lock()
	n = len(g.streams)
	g.mu.Unlock()
	require.Zero(t, n)
}
