package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/examples/relay/internal/relaytest"
)

// TestMetrics checks that /metrics is off by default and, when on, counts
// requests by route, tool calls by outcome, and held streams by kind.
func TestMetrics(t *testing.T) {
	t.Run("metrics=0", func(t *testing.T) {
		r := startRelay(t, testConfig(t, t.TempDir()+"/relay.db"))
		status, body := r.get(t, "/metrics", "")
		assert.Equal(t, http.StatusNotFound, status)
		assert.Contains(t, string(body), "RELAY_METRICS=1")
	})
	t.Run("metrics=1", func(t *testing.T) {
		up := relaytest.Upstream(t, relaytest.Quick())
		cfg := testConfig(t, t.TempDir()+"/relay.db")
		cfg.Metrics = true
		r := startRelay(t, cfg)
		alice, _, _ := people(relaytest.MCPURL(up))
		r.DB.Insert(t, alice)
		r.stream(t, "/mcp", alice.Token)
		r.stream(t, "/api/events", alice.Token)
		r.call(t, alice.Token, "github__tool_01", nil)
		r.rpc(t, "wrong", "ping", nil)

		status, body := r.get(t, "/metrics", "")
		require.Equal(t, http.StatusOK, status)
		for _, want := range []string{
			`relay_http_requests_total{code="200",route="mcp_post"} 1`,
			`relay_db_connections{state="in_use"} 0`,
			`relay_db_max_connections `,
			`relay_http_requests_total{code="401",route="mcp_post"} 1`,
			`relay_http_requests_total{code="200",route="mcp_stream"} 1`,
			`relay_http_request_duration_seconds_count{route="mcp_post"} 2`,
			`relay_tool_calls_total{outcome="ok"} 1`,
			`relay_held_streams{kind="user"} 1`,
			`relay_held_streams{kind="workspace"} 1`,
			`relay_inflight_requests 0`,
			`relay_upstream_queued 0`,
			`go_goroutines `,
			`process_resident_memory_bytes `,
		} {
			assert.Contains(t, string(body), want)
		}
	})
}

// TestPprof checks that the profiles are off by default and served with
// RELAY_PPROF=1: the index, and a heap profile in pprof's gzipped form.
func TestPprof(t *testing.T) {
	t.Run("pprof=0", func(t *testing.T) {
		r := startRelay(t, testConfig(t, t.TempDir()+"/relay.db"))
		status, _ := r.get(t, "/debug/pprof/heap", "")
		assert.Equal(t, http.StatusNotFound, status)
	})
	t.Run("pprof=1", func(t *testing.T) {
		cfg := testConfig(t, t.TempDir()+"/relay.db")
		cfg.Pprof = true
		r := startRelay(t, cfg)
		status, body := r.get(t, "/debug/pprof/", "")
		require.Equal(t, http.StatusOK, status)
		assert.Contains(t, string(body), "goroutine")
		status, body = r.get(t, "/debug/pprof/heap", "")
		require.Equal(t, http.StatusOK, status)
		require.Greater(t, len(body), 2)
		assert.Equal(t, []byte{0x1f, 0x8b}, body[:2])
	})
}
