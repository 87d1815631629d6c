// Package relaytest has helpers for the relay's tests: a mock upstream
// (package mockupstream) in the test's process, database population, an
// event-stream reader and a JSON-RPC caller.
package relaytest

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/headroom-dev/headroom/mockupstream"
)

// Upstream starts a mock upstream in this process with behaviour b and
// stops it in t.Cleanup. Its MCP endpoint is MCPURL(l).
func Upstream(t testing.TB, b mockupstream.Behavior) *mockupstream.Local {
	t.Helper()
	return mockupstream.StartT(t, mockupstream.Config{
		Behavior: b,
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
}

// MCPURL returns the MCP endpoint of a mock upstream: a connector's upstream_url.
func MCPURL(l *mockupstream.Local) string { return l.URL + "/mcp" }

// Quick is a behaviour that answers at once: two tools (tool_01, tool_02)
// and 64-byte answers, no errors.
func Quick() mockupstream.Behavior {
	return mockupstream.Behavior{Seed: 1, ToolCount: 2, Sizes: []mockupstream.Size{{Weight: 1, Bytes: 64}}}
}

// Hanging is Quick with every request held until its client gives up.
func Hanging() mockupstream.Behavior {
	b := Quick()
	b.Faults = mockupstream.Faults{Hang: 1, MaxHang: mockupstream.Duration(2 * time.Minute)}
	return b
}
