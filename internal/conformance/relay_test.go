package conformance

import (
	"database/sql"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/headroom-dev/headroom/examples/relay/schema"
	"github.com/headroom-dev/headroom/examples/relay/server"
)

// relayRevisions are the revisions the relay serves: supportedVersions
// (the handshake era) and StatelessVersion in examples/relay/server.
var relayRevisions = []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", server.StatelessVersion}

// statelessRevision is the first revision without a handshake (SEP-2575).
const statelessRevision = "2026-07-28"

// relayToken is the bearer token of the relay's one user.
const relayToken = "conformance-token"

// connector is one of the relay user's connectors: its tools are listed as
// <Name>__<tool>.
type connector struct{ Name, URL string }

// startRelay starts a relay on loopback with an SQLite database and one
// user (relayToken) with the given connectors, and returns its MCP
// endpoint.
func startRelay(t *testing.T, connectors ...connector) string {
	t.Helper()
	_, url := startRelayServer(t, connectors...)
	return url
}

// startRelayServer is startRelay that also returns the relay, to drain it
// or read its Stats.
func startRelayServer(t *testing.T, connectors ...connector) (*server.Server, string) {
	t.Helper()
	ctx := testContext(t)
	cfg := server.DefaultConfig()
	cfg.SQLitePath = t.TempDir() + "/relay.db"
	cfg.DBMaxConns = 2
	cfg.Logger = quiet
	s, err := server.New(ctx, cfg)
	require.NoError(t, err)
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	t.Cleanup(func() { s.Close() })

	// server.New created the schema; add the user as the relay's tests do.
	db, err := sql.Open("sqlite", "file:"+cfg.SQLitePath+"?_pragma=busy_timeout(10000)")
	require.NoError(t, err)
	defer db.Close()
	stmts := []struct {
		q    string
		args []any
	}{
		{`INSERT INTO workspaces (id, name) VALUES (1, 'conformance')`, nil},
		{`INSERT INTO users (id, workspace_id, name, token_hash) VALUES (1, 1, 'conformance', ?)`, []any{schema.TokenHash(relayToken)}},
	}
	for i, c := range connectors {
		stmts = append(stmts, struct {
			q    string
			args []any
		}{`INSERT INTO connectors (id, user_id, name, upstream_url) VALUES (?, 1, ?, ?)`, []any{i + 1, c.Name, c.URL}})
	}
	for _, st := range stmts {
		_, err := db.ExecContext(ctx, st.q, st.args...)
		require.NoError(t, err, st.q)
	}
	return s, ts.URL + "/mcp"
}

// TestRelay_SDKClient drives the relay with the SDK's client on every
// revision the relay serves, with two connectors on mock upstreams, one
// whose tools work and one whose tools fail. It proves the handshake
// (the revision offered is answered, a session id is assigned) or, at the
// stateless revision, server/discover in its place (no initialize, no
// session), that the SDK accepts every tool listed, that a result and a
// tool error reach the client as such and an unknown tool is a JSON-RPC
// error, that the relay's own events on the client's standalone stream
// (event: call) do not break the SDK session, that ping is gone from the
// stateless revision, and that every HTTP exchange has a status and
// content type the transport allows.
func TestRelay_SDKClient(t *testing.T) {
	forEachRevision(t, relayRevisions, func(t *testing.T, rev string) {
		stateless := rev >= statelessRevision
		_, good := startUpstream(t, false)
		_, bad := startUpstream(t, true)
		url := startRelay(t, connector{"good", good}, connector{"bad", bad})
		wl := newWireLog(t, relayToken)
		cs := connectSDK(t, url, wl, rev)
		ctx := testContext(t)

		ir := cs.InitializeResult()
		assert.Equal(t, rev, ir.ProtocolVersion, "a supported revision offered is answered")
		require.NotNil(t, ir.ServerInfo)
		assert.Equal(t, "headroom-relay", ir.ServerInfo.Name)
		require.NotNil(t, ir.Capabilities)
		assert.NotNil(t, ir.Capabilities.Tools, "the tools capability")
		if stateless {
			assert.Empty(t, cs.ID(), "no session in the stateless era")
		} else {
			assert.NotEmpty(t, cs.ID(), "the relay assigns a session id")
		}

		// The SDK drops the tools it finds invalid: each must survive.
		lt, err := cs.ListTools(ctx, nil)
		require.NoError(t, err)
		assert.ElementsMatch(t, []string{"good__tool_01", "good__tool_02", "bad__tool_01", "bad__tool_02"}, toolNames(lt.Tools))

		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "good__tool_01", Arguments: map[string]any{"query": "x"}})
		require.NoError(t, err)
		assert.False(t, res.IsError)
		assert.Len(t, text(t, res), 64, "the upstream's text")

		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "bad__tool_01", Arguments: map[string]any{"query": "x"}})
		require.NoError(t, err, "a tool error is a result")
		assert.True(t, res.IsError)
		assert.True(t, strings.HasPrefix(text(t, res), "mockupstream: "), "the upstream's message: %q", text(t, res))

		_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "nobody__tool_01"})
		var werr *jsonrpc.Error
		require.ErrorAs(t, err, &werr, "an unknown tool is a protocol error")
		assert.Equal(t, jsonrpc.CodeInvalidParams, int(werr.Code))

		if stateless {
			ex := wl.exchanges()
			checkTransport(t, ex, relayRevisions)
			checkStateless(t, ex, []string{"server/discover", "tools/list", "tools/call", "tools/call", "tools/call"})
			// ping is gone from the revision. The SDK's client still sends
			// it when asked to, without params._meta, which the relay
			// refuses as the SDK's stateless server does (400, invalid
			// params: TestRelay_StatelessLikeSDKServer); the session goes
			// on.
			err := cs.Ping(ctx, nil)
			require.ErrorAs(t, err, &werr, "ping at %s", rev)
			assert.Equal(t, jsonrpc.CodeInvalidParams, int(werr.Code))
			_, err = cs.ListTools(ctx, nil)
			require.NoError(t, err, "the session after the refused ping")
			require.NoError(t, cs.Close())
			return
		}
		// The relay announces every call on the user's stream, which the
		// SDK opened with GET during the handshake; its events are not
		// JSON-RPC messages but are named (event: call), so the SDK must
		// skip them and keep the session.
		wl.waitStream(ctx, "event: call")
		require.NoError(t, cs.Ping(ctx, nil), "the session after the relay's events")

		require.NoError(t, cs.Close())
		checkTransport(t, wl.exchanges(), relayRevisions)
	})
}

// checkStateless checks that the SDK's client spoke the stateless era
// only: the requests methods (POSTs, in order; notifications left out),
// each with the revision in its MCP-Protocol-Version header, no GET
// stream, no initialize, and no session id assigned.
func checkStateless(t *testing.T, ex []exchange, methods []string) {
	t.Helper()
	var got []string
	for i, e := range ex {
		what := fmt.Sprintf("%d: %s %s", i, e.Method, e.RPCMethod)
		assert.Equal(t, http.MethodPost, e.Method, what)
		assert.Equal(t, statelessRevision, e.Version, "%s: %s", what, versionHeader)
		assert.Empty(t, e.Session, "%s: a session id", what)
		if e.Call {
			got = append(got, e.RPCMethod)
		}
	}
	assert.Equal(t, methods, got)
}

// TestRelay_SDKDefaultClient proves that the SDK's client with its
// defaults, which first tries server/discover at revision 2026-07-28, is
// answered with the revisions the relay speaks, settles on 2026-07-28 and
// stays in the stateless era: no handshake, no session, no GET stream.
func TestRelay_SDKDefaultClient(t *testing.T) {
	_, good := startUpstream(t, false)
	url := startRelay(t, connector{"good", good})
	wl := newWireLog(t, relayToken)
	cs := connectSDK(t, url, wl, "")
	ir := cs.InitializeResult()
	assert.Equal(t, statelessRevision, ir.ProtocolVersion)
	require.NotNil(t, ir.ServerInfo, "serverInfo from server/discover's _meta")
	assert.Equal(t, "headroom-relay", ir.ServerInfo.Name)
	assert.Equal(t, server.Version, ir.ServerInfo.Version)
	lt, err := cs.ListTools(testContext(t), nil)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"good__tool_01", "good__tool_02"}, toolNames(lt.Tools))
	require.NoError(t, cs.Close())
	checkStateless(t, wl.exchanges(), []string{"server/discover", "tools/list"})
	checkTransport(t, wl.exchanges(), relayRevisions)
}

// TestRelay_UnknownRevision proves that the relay answers a revision it
// does not know with one it supports, which the SDK can then speak ("If
// the server supports the requested protocol version, it MUST respond with
// the same version. Otherwise, the server MUST respond with another
// protocol version it supports"); the SDK's client disconnects when
// answered with a revision it does not know.
func TestRelay_UnknownRevision(t *testing.T) {
	_, good := startUpstream(t, false)
	url := startRelay(t, connector{"good", good})
	cs := connectSDK(t, url, newWireLog(t, relayToken), "2025-01-01")
	assert.Contains(t, relayRevisions, cs.InitializeResult().ProtocolVersion)
	require.NoError(t, cs.Ping(testContext(t), nil))
}
