package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/examples/relay/internal/relaytest"
	"github.com/headroom-dev/headroom/examples/relay/server"
)

// statelessMeta is the params._meta of a request of the stateless revision.
const statelessMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"` + server.StatelessVersion + `","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"test","version":"1"}}`

// statelessBody returns a request of the stateless revision: params (an
// object's members, possibly none) with the _meta added.
func statelessBody(id, method, params string) []byte {
	if params != "" {
		params += ","
	}
	return []byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `","params":{` + params + statelessMeta + `}}`)
}

// wantServerInfo is the serverInfo every stateless-era result carries in _meta.
var wantServerInfo = map[string]any{"name": "headroom-relay", "version": server.Version}

// resultMeta returns the _meta of a result.
func resultMeta(t *testing.T, rep relaytest.Reply) map[string]any {
	t.Helper()
	var res struct {
		Meta map[string]any `json:"_meta"`
	}
	require.NoError(t, json.Unmarshal(rep.Result, &res), "%s", rep.Body)
	return res.Meta
}

// TestDiscover checks server/discover's answer, field by field as the MCP
// Go SDK's DiscoverResult reads it: every revision the relay speaks,
// newest first, the tools capability, the cache hints and the relay's
// identity in _meta.
func TestDiscover(t *testing.T) {
	r := startRelay(t, testConfig(t, t.TempDir()+"/relay.db"))
	alice, _, _ := people("http://127.0.0.1:9/mcp")
	r.DB.Insert(t, alice)
	want := map[string]any{
		"supportedVersions": []any{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"},
		"capabilities":      map[string]any{"tools": map[string]any{"listChanged": false}},
		"ttlMs":             0.0,
		"cacheScope":        "public",
		"resultType":        "complete",
		"_meta":             map[string]any{"io.modelcontextprotocol/serverInfo": wantServerInfo},
	}
	tests := []struct {
		name    string
		body    []byte
		headers []string
	}{
		// As the SDK's client asks: the revision in the header and in _meta.
		{name: "stateless", body: statelessBody("1", "server/discover", ""), headers: []string{server.VersionHeader, server.StatelessVersion, server.MethodHeader, "server/discover"}},
		// The revision in _meta only.
		{name: "meta_only", body: statelessBody("1", "server/discover", "")},
		// Without a revision: a client probing what the relay speaks.
		{name: "bare", body: []byte(`{"jsonrpc":"2.0","id":1,"method":"server/discover"}`)},
	}
	for _, tc := range tests {
		t.Run("request="+tc.name, func(t *testing.T) {
			rep := relaytest.PostWith(t, t.Context(), r.Client, r.URL+"/mcp", alice.Token, tc.body, tc.headers...)
			require.Equal(t, http.StatusOK, rep.Status, "%s", rep.Body)
			require.Nil(t, rep.Error, "%s", rep.Body)
			var got map[string]any
			require.NoError(t, json.Unmarshal(rep.Result, &got))
			assert.Equal(t, want, got)
			assert.Empty(t, rep.Header.Get(server.SessionHeader), "no session in the stateless era")
		})
	}
	rep := relaytest.Post(t, t.Context(), r.Client, r.URL+"/mcp", "", statelessBody("1", "server/discover", ""))
	assert.Equal(t, http.StatusUnauthorized, rep.Status, "server/discover wants the token too")
}

// TestStatelessRequests checks how requests of the stateless revision are
// told apart and checked: the headers present must mirror the body
// (-32020, HTTP 400, naming both values), the revision must be in
// params._meta (-32602, HTTP 400), initialize and ping are gone (-32601,
// HTTP 404, as the SDK's server answers), and subscriptions/listen exists
// only there. Each refusal has a twin that is
// accepted, so the refusal is the header's (or the _meta's).
func TestStatelessRequests(t *testing.T) {
	up := relaytest.Upstream(t, relaytest.Quick())
	r := startRelay(t, testConfig(t, t.TempDir()+"/relay.db"))
	alice, _, _ := people(relaytest.MCPURL(up))
	r.DB.Insert(t, alice)

	const v = server.StatelessVersion
	call := statelessBody("3", "tools/call", `"name":"github__tool_01","arguments":{}`)
	tests := []struct {
		name    string
		body    []byte
		headers []string
		status  int
		code    int      // 0: a result
		message []string // parts of the error message
	}{
		// Headers that mirror the body.
		{name: "call_headers_match", body: call, headers: []string{server.VersionHeader, v, server.MethodHeader, "tools/call", server.NameHeader, "github__tool_01"}, status: 200},
		// The header names another revision than _meta.
		{name: "version_header_older", body: call, headers: []string{server.VersionHeader, "2025-11-25"}, status: 400, code: server.CodeHeaderMismatch,
			message: []string{server.VersionHeader, `"2025-11-25"`, `"2026-07-28"`}},
		// _meta names another revision than the header.
		{name: "version_meta_older", body: []byte(strings.Replace(string(call), `"2026-07-28"`, `"2025-11-25"`, 1)),
			headers: []string{server.VersionHeader, v}, status: 400, code: server.CodeHeaderMismatch, message: []string{server.VersionHeader, `"2026-07-28"`, `"2025-11-25"`}},
		// Mcp-Method names another method.
		{name: "method_header", body: call, headers: []string{server.VersionHeader, v, server.MethodHeader, "tools/list"}, status: 400, code: server.CodeHeaderMismatch,
			message: []string{server.MethodHeader, `"tools/list"`, `"tools/call"`}},
		// Mcp-Name names another tool.
		{name: "name_header", body: call, headers: []string{server.VersionHeader, v, server.NameHeader, "github__tool_02"}, status: 400, code: server.CodeHeaderMismatch,
			message: []string{server.NameHeader, `"github__tool_02"`, `"github__tool_01"`}},
		// The header alone names the revision: _meta must too.
		{name: "no_meta", body: []byte(`{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{}}`), headers: []string{server.VersionHeader, v}, status: 400, code: server.CodeInvalidParams,
			message: []string{"io.modelcontextprotocol/protocolVersion"}},
		// No params at all.
		{name: "no_params", body: []byte(`{"jsonrpc":"2.0","id":4,"method":"tools/list"}`), headers: []string{server.VersionHeader, v}, status: 400, code: server.CodeInvalidParams,
			message: []string{"io.modelcontextprotocol/protocolVersion"}},
		// The revision in _meta is not a string.
		{name: "meta_not_string", body: []byte(`{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":20260728}}}`), headers: []string{server.VersionHeader, v},
			status: 400, code: server.CodeInvalidParams, message: []string{"io.modelcontextprotocol/protocolVersion"}},
		// ping is gone from the revision.
		{name: "ping", body: statelessBody("5", "ping", ""), headers: []string{server.VersionHeader, v}, status: 404, code: server.CodeMethodNotFound, message: []string{"ping"}},
		// So is initialize.
		{name: "initialize", body: statelessBody("5", "initialize", `"protocolVersion":"2026-07-28"`), status: 404, code: server.CodeMethodNotFound, message: []string{"initialize"}},
		// Without the revision, ping is what it was.
		{name: "handshake_ping", body: []byte(`{"jsonrpc":"2.0","id":5,"method":"ping"}`), headers: []string{server.VersionHeader, "2025-11-25"}, status: 200},
		// The mirror headers are of the stateless era only.
		{name: "handshake_method_header", body: []byte(`{"jsonrpc":"2.0","id":5,"method":"ping"}`), headers: []string{server.MethodHeader, "tools/call"}, status: 200},
		// subscriptions/listen is of the stateless era only.
		{name: "handshake_listen", body: []byte(`{"jsonrpc":"2.0","id":6,"method":"subscriptions/listen","params":{"notifications":{}}}`), headers: []string{server.VersionHeader, "2025-11-25"},
			status: 200, code: server.CodeMethodNotFound, message: []string{"subscriptions/listen", "2026-07-28"}},
		// subscriptions/listen wants to answer with an event stream.
		{name: "listen_no_event_stream", body: statelessBody("6", "subscriptions/listen", `"notifications":{}`), headers: []string{"Accept", "application/json"},
			status: 406, code: server.CodeInvalidRequest, message: []string{"text/event-stream"}},
		// subscriptions/listen without the notifications to subscribe to.
		{name: "listen_no_notifications", body: statelessBody("6", "subscriptions/listen", ""), status: 200, code: server.CodeInvalidParams, message: []string{"notifications"}},
	}
	for _, tc := range tests {
		t.Run("request="+tc.name, func(t *testing.T) {
			// Bounded: an answer held open as a stream fails, not hangs.
			ctx, cancel := context.WithTimeout(t.Context(), relaytest.WaitTimeout)
			defer cancel()
			rep := relaytest.PostWith(t, ctx, r.Client, r.URL+"/mcp", alice.Token, tc.body, tc.headers...)
			assert.Equal(t, tc.status, rep.Status, "%s", rep.Body)
			var id struct{ ID json.RawMessage }
			require.NoError(t, json.Unmarshal(rep.Body, &id), "%s", rep.Body)
			var req struct{ ID json.RawMessage }
			require.NoError(t, json.Unmarshal(tc.body, &req))
			assert.Equal(t, string(req.ID), string(id.ID), "the answer's id")
			if tc.code == 0 {
				assert.Nil(t, rep.Error, "%s", rep.Body)
				return
			}
			require.NotNil(t, rep.Error, "%s", rep.Body)
			assert.Equal(t, tc.code, rep.Error.Code)
			for _, m := range tc.message {
				assert.Contains(t, rep.Error.Message, m)
			}
		})
	}
	assert.EqualValues(t, 1, up.Server.Stats().ByMethod["tools/call"], "only the call whose headers matched reached the upstream")
}

// TestStatelessTools checks tools/list and tools/call in the stateless
// era, the revision named in _meta alone or in the header too: as in the
// handshake era, with no session, and with the relay's serverInfo added
// to each result's _meta; handshake-era results stay as they were.
func TestStatelessTools(t *testing.T) {
	up := relaytest.Upstream(t, relaytest.Quick())
	r := startRelay(t, testConfig(t, t.TempDir()+"/relay.db"))
	alice, _, _ := people(relaytest.MCPURL(up))
	r.DB.Insert(t, alice)
	for _, withHeaders := range []bool{false, true} {
		t.Run(fmt.Sprintf("headers=%t", withHeaders), func(t *testing.T) {
			h := func(method string) []string {
				if !withHeaders {
					return nil
				}
				return []string{server.VersionHeader, server.StatelessVersion, server.MethodHeader, method}
			}
			list := relaytest.PostWith(t, t.Context(), r.Client, r.URL+"/mcp", alice.Token, statelessBody("1", "tools/list", ""), h("tools/list")...)
			require.Equal(t, http.StatusOK, list.Status, "%s", list.Body)
			require.Nil(t, list.Error, "%s", list.Body)
			var tl struct {
				Tools []struct{ Name string } `json:"tools"`
			}
			require.NoError(t, json.Unmarshal(list.Result, &tl))
			assert.Len(t, tl.Tools, 4)
			assert.Equal(t, map[string]any{"io.modelcontextprotocol/serverInfo": wantServerInfo}, resultMeta(t, list))
			assert.Empty(t, list.Header.Get(server.SessionHeader))

			call := relaytest.PostWith(t, t.Context(), r.Client, r.URL+"/mcp", alice.Token,
				statelessBody(`"c-1"`, "tools/call", `"name":"linear__tool_02","arguments":{"query":"x"}`), h("tools/call")...)
			require.Equal(t, http.StatusOK, call.Status, "%s", call.Body)
			require.Nil(t, call.Error, "%s", call.Body)
			text, isErr := call.ToolResult(t)
			assert.False(t, isErr)
			assert.Len(t, text, 64, "the upstream's text passes through")
			assert.Equal(t, map[string]any{"io.modelcontextprotocol/serverInfo": wantServerInfo}, resultMeta(t, call))
		})
	}
	hs := r.rpc(t, alice.Token, "tools/list", nil)
	require.Nil(t, hs.Error, "%s", hs.Body)
	assert.Nil(t, resultMeta(t, hs), "a handshake-era result has no _meta added")
}

// listenBody is a subscriptions/listen request with id.
func listenBody(id string) []byte {
	return statelessBody(id, "subscriptions/listen", `"notifications":{"toolsListChanged":true}`)
}

// TestListen checks the stateless era's stream: a subscriptions/listen
// request is answered with the user's event stream, held as GET /mcp's
// is (hijacked, or by net/http under the stream-goroutine fault), that
// starts with the acknowledgment (honoring none of the notifications
// asked for: the relay announces none), then carries the user's call
// events and keepalives. Last-Event-ID is ignored: the revision has no
// resumption.
func TestListen(t *testing.T) {
	for _, mode := range []string{"hijack", "goroutine"} {
		t.Run("mode="+mode, func(t *testing.T) {
			up := relaytest.Upstream(t, relaytest.Quick())
			cfg := testConfig(t, t.TempDir()+"/relay.db")
			cfg.Faults.StreamGoroutine = mode == "goroutine"
			cfg.KeepaliveInterval = 50 * time.Millisecond
			r := startRelay(t, cfg)
			alice, bob, _ := people(relaytest.MCPURL(up))
			r.DB.Insert(t, alice, bob)

			// Two calls before the stream: a GET /mcp with Last-Event-ID
			// of the first would get the second replayed.
			r.call(t, alice.Token, "github__tool_01", nil)
			r.call(t, alice.Token, "github__tool_01", nil)
			var last int64
			require.NoError(t, r.DB.QueryRow(`SELECT max(id) FROM events`).Scan(&last))

			s := relaytest.OpenPostStream(t, r.Client, r.URL+"/mcp", alice.Token, listenBody(`"sub-1"`),
				server.MethodHeader, "subscriptions/listen", "Last-Event-ID", strconv.FormatInt(last-1, 10))
			assert.Equal(t, "text/event-stream", s.Resp.Header.Get("Content-Type"))
			first, ok := s.NextAny(t)
			require.True(t, ok)
			assert.Equal(t, "message", first.Event, "the acknowledgment comes first")
			assert.Empty(t, first.ID)
			assert.JSONEq(t, `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{},"_meta":{"io.modelcontextprotocol/subscriptionId":"sub-1"}}}`, first.Data)
			connected, ok := s.NextAny(t)
			require.True(t, ok)
			assert.Equal(t, "connected", connected.Comment)
			relaytest.Eventually(t, "the listen stream counted as a user stream", func() bool { return r.Stats().UserStreams == 1 })

			r.call(t, bob.Token, "github__tool_01", nil) // not alice's
			r.call(t, alice.Token, "linear__tool_02", map[string]any{"query": "x"})
			ev, ok := s.Next(t)
			require.True(t, ok)
			assert.Equal(t, "call", ev.Event)
			c := ev.Call(t)
			assert.Equal(t, int64(1), c.UserID, "alice's own events only")
			assert.Equal(t, "linear__tool_02", c.Tool, "a live event, not a replayed one")
			assert.Greater(t, c.ID, last)
			assert.Equal(t, strconv.FormatInt(c.ID, 10), ev.ID)

			for {
				e, ok := s.NextAny(t)
				require.True(t, ok)
				if e.Comment == "keepalive" {
					break
				}
			}
			s.Close()
			relaytest.Eventually(t, "the stream closed when its client left", func() bool { return r.Stats().UserStreams == 0 })
		})
	}
}

// TestShutdownEndsListen checks that a drain ends a subscriptions/listen
// stream with the request's result (so that the client's request
// completes), then the shutdown event, and closes it; a GET stream gets
// the shutdown event alone.
func TestShutdownEndsListen(t *testing.T) {
	for _, mode := range []string{"hijack", "goroutine"} {
		t.Run("mode="+mode, func(t *testing.T) {
			cfg := testConfig(t, t.TempDir()+"/relay.db")
			cfg.Faults.StreamGoroutine = mode == "goroutine"
			cfg.KeepaliveInterval = time.Hour // only the frames under test
			r := startRelay(t, cfg)
			alice, _, _ := people("http://127.0.0.1:9/mcp")
			r.DB.Insert(t, alice)
			listen := relaytest.OpenPostStream(t, r.Client, r.URL+"/mcp", alice.Token, listenBody("7"))
			ack, ok := listen.NextAny(t)
			require.True(t, ok)
			require.Equal(t, "message", ack.Event, "the acknowledgment first")
			get := r.stream(t, "/mcp", alice.Token)
			relaytest.Eventually(t, "both streams held", func() bool { return r.Stats().UserStreams == 2 })

			rep, err := r.Shutdown(t.Context())
			require.NoError(t, err)
			assert.EqualValues(t, 2, rep.Streams)

			res, ok := listen.Next(t)
			require.True(t, ok)
			assert.Equal(t, "message", res.Event)
			assert.JSONEq(t, `{"jsonrpc":"2.0","id":7,"result":{"_meta":{"io.modelcontextprotocol/subscriptionId":7}}}`, res.Data)
			for name, s := range map[string]*relaytest.Stream{"listen": listen, "get": get} {
				ev, ok := s.Next(t)
				require.True(t, ok, name)
				assert.Equal(t, "shutdown", ev.Event, name)
				_, ok = s.Next(t)
				assert.False(t, ok, "%s: the stream ends after the shutdown event", name)
			}
		})
	}
}
