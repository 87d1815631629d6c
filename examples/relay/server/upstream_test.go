package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/examples/relay/internal/relaytest"
	"github.com/headroom-dev/headroom/examples/relay/server"
	"github.com/headroom-dev/headroom/mockupstream"
)

// TestUpstreamFailureIsToolError checks that every way an upstream can fail
// comes back as a tool result with isError (not an HTTP or JSON-RPC error),
// and is recorded with its outcome.
func TestUpstreamFailureIsToolError(t *testing.T) {
	withFaults := func(f mockupstream.Faults) mockupstream.Behavior {
		b := relaytest.Quick()
		b.Faults = f
		return b
	}
	tests := []struct {
		name     string
		behavior mockupstream.Behavior
		deadURL  bool // the connector points at a closed port
		tool     string
		outcome  string
		text     string // part of the tool error's text
	}{
		// The upstream answers 503.
		{name: "http_5xx", behavior: withFaults(mockupstream.Faults{HTTP5xx: 1, Status: 503}), tool: "github__tool_01", outcome: "upstream_error", text: "HTTP 503"},
		// The upstream resets the connection.
		{name: "reset", behavior: withFaults(mockupstream.Faults{Reset: 1}), tool: "github__tool_01", outcome: "upstream_error", text: "upstream failed"},
		// Nothing listens at the connector's URL.
		{name: "refused", behavior: relaytest.Quick(), deadURL: true, tool: "github__tool_01", outcome: "upstream_error", text: "refused"},
		// The upstream never answers: the call timeout (200 ms here) ends it.
		{name: "timeout", behavior: relaytest.Hanging(), tool: "github__tool_01", outcome: "timeout", text: "timed out after 200ms"},
		// The upstream answers a JSON-RPC error (it has no tool_99).
		{name: "rpc_error", behavior: relaytest.Quick(), tool: "github__tool_99", outcome: "tool_error", text: "tool_99"},
		// The upstream answers isError itself.
		{name: "tool_error", behavior: func() mockupstream.Behavior { b := relaytest.Quick(); b.ToolErrors = 1; return b }(), tool: "github__tool_01", outcome: "tool_error", text: ""},
	}
	for _, tc := range tests {
		t.Run("failure="+tc.name, func(t *testing.T) {
			up := relaytest.Upstream(t, tc.behavior)
			cfg := testConfig(t, t.TempDir()+"/relay.db")
			cfg.CallTimeout = 200 * time.Millisecond
			r := startRelay(t, cfg)
			url := relaytest.MCPURL(up)
			if tc.deadURL {
				url = "http://127.0.0.1:9/mcp"
			}
			alice, _, _ := people(url)
			r.DB.Insert(t, alice)
			feed := r.stream(t, "/api/events", alice.Token)

			text, isErr := r.call(t, alice.Token, tc.tool, map[string]any{"query": "q"})
			assert.True(t, isErr)
			assert.Contains(t, text, tc.text)
			assert.Equal(t, []string{tc.outcome}, r.usageOutcomes(t, alice.ID))
			ev, ok := feed.Next(t)
			require.True(t, ok)
			assert.Equal(t, tc.outcome, ev.Call(t).Outcome)
		})
	}
}

// TestUpstreamModes checks the two runtime models under an upstream that
// never answers: sync runs at most RELAY_WORKERS upstream requests and
// queues the rest, async sends them all at once.
func TestUpstreamModes(t *testing.T) {
	const workers, calls = 2, 5
	tests := []struct {
		mode           string
		wantAtUpstream int64 // requests the upstream holds at once
		wantQueued     int64 // requests waiting for a worker
	}{
		// Two workers, each held by its round trip: three calls queue.
		{mode: server.ModeSync, wantAtUpstream: workers, wantQueued: calls - workers},
		// No workers: every call goes out at once.
		{mode: server.ModeAsync, wantAtUpstream: calls, wantQueued: 0},
	}
	for _, tc := range tests {
		t.Run("mode="+tc.mode, func(t *testing.T) {
			up := relaytest.Upstream(t, relaytest.Hanging())
			cfg := testConfig(t, t.TempDir()+"/relay.db")
			cfg.UpstreamMode = tc.mode
			cfg.Workers = workers
			r := startRelay(t, cfg)
			alice, _, _ := people(relaytest.MCPURL(up))
			r.DB.Insert(t, alice)

			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			for range calls {
				wg.Go(func() {
					body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"github__tool_01","arguments":{}}}`)
					req, _ := http.NewRequestWithContext(ctx, http.MethodPost, r.URL+"/mcp", bytesReader(body))
					req.Header.Set("Authorization", "Bearer "+alice.Token)
					if resp, err := r.Client.Do(req); err == nil {
						resp.Body.Close()
					}
				})
			}
			relaytest.Eventually(t, "all calls arrived", func() bool {
				st := r.Stats()
				return st.InflightRequests == calls && st.UpstreamQueued == tc.wantQueued &&
					up.Server.Stats().InFlight == tc.wantAtUpstream
			})
			assert.Equal(t, tc.wantAtUpstream, r.Stats().UpstreamActive)
			cancel() // the clients give up: the relay cancels the upstream requests
			wg.Wait()
			relaytest.Eventually(t, "calls ended", func() bool {
				return r.Stats().InflightRequests == 0 && up.Server.Stats().InFlight == 0
			})
			st := up.Server.Stats()
			assert.Equal(t, tc.wantAtUpstream, st.MaxInFlight, "never more at the upstream at once")
			// Each forwarded call ended given up. In sync mode a freed worker
			// may still forward a queued call whose client left before the
			// relay noticed, so up to all of them may have got there.
			assert.GreaterOrEqual(t, st.ByOutcome["hang"], tc.wantAtUpstream)
			assert.LessOrEqual(t, st.ByOutcome["hang"], int64(calls))
			assert.Empty(t, r.usageOutcomes(t, alice.ID), "a call whose client left is not recorded")
		})
	}
}

// TestClientDisconnectMidCall checks that a client that hangs up during a
// call cancels the upstream request and leaves no goroutine behind.
func TestClientDisconnectMidCall(t *testing.T) {
	up := relaytest.Upstream(t, relaytest.Hanging())
	r := startRelay(t, testConfig(t, t.TempDir()+"/relay.db"))
	alice, _, _ := people(relaytest.MCPURL(up))
	r.DB.Insert(t, alice)
	r.rpc(t, alice.Token, "ping", nil) // warm the auth cache and the pools
	r.Client.CloseIdleConnections()
	relaytest.Eventually(t, "idle", func() bool { return r.Stats().InflightRequests == 0 })
	before := runtime.NumGoroutine()

	for range 3 {
		tr := &http.Transport{}
		client := &http.Client{Transport: tr}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"github__tool_01"}}`)
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, r.URL+"/mcp", bytesReader(body))
			req.Header.Set("Authorization", "Bearer "+alice.Token)
			if resp, err := client.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
		relaytest.Eventually(t, "call at the upstream", func() bool { return up.Server.Stats().InFlight == 1 })
		cancel()
		<-done
		tr.CloseIdleConnections()
		relaytest.Eventually(t, "upstream request cancelled", func() bool { return up.Server.Stats().InFlight == 0 })
	}
	assert.EqualValues(t, 3, up.Server.Stats().ByOutcome["hang"])
	relaytest.Eventually(t, "goroutines back to where they were", func() bool { return runtime.NumGoroutine() <= before })
	assert.Zero(t, r.Stats().InflightRequests)
}

// TestToolsListPartialFailure checks that tools/list leaves out a failing
// connector, and is a JSON-RPC error only when every connector fails.
func TestToolsListPartialFailure(t *testing.T) {
	up := relaytest.Upstream(t, relaytest.Quick())
	r := startRelay(t, testConfig(t, t.TempDir()+"/relay.db"))
	alice := relaytest.User{ID: 1, WorkspaceID: 10, Token: "a", Connectors: []relaytest.Connector{
		{ID: 1, Name: "good", URL: relaytest.MCPURL(up)}, {ID: 2, Name: "dead", URL: "http://127.0.0.1:9/mcp"}}}
	bob := relaytest.User{ID: 2, WorkspaceID: 10, Token: "b", Connectors: []relaytest.Connector{
		{ID: 3, Name: "dead", URL: "http://127.0.0.1:9/mcp"}}}
	carol := relaytest.User{ID: 3, WorkspaceID: 10, Token: "c"}
	r.DB.Insert(t, alice, bob, carol)

	list := r.rpc(t, alice.Token, "tools/list", nil)
	require.Nil(t, list.Error)
	var tl struct{ Tools []struct{ Name string } }
	require.NoError(t, json.Unmarshal(list.Result, &tl))
	assert.Len(t, tl.Tools, 2, "only the good connector's tools")

	list = r.rpc(t, bob.Token, "tools/list", nil)
	require.NotNil(t, list.Error)
	assert.Equal(t, server.CodeInternalError, list.Error.Code)
	assert.Contains(t, list.Error.Message, "dead")

	list = r.rpc(t, carol.Token, "tools/list", nil)
	require.Nil(t, list.Error)
	assert.JSONEq(t, `{"tools":[]}`, string(list.Result), "no connectors, no tools")
}
