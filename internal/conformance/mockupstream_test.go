package conformance

import (
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/mockupstream"
)

// mockRevisions are the revisions the mock upstream serves: initialize
// answers the revision asked for when it is one of these
// (mockupstream/jsonrpc.go), and nothing else depends on the revision.
var mockRevisions = []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"}

// quiet is a logger that drops everything.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// startUpstream starts a mock upstream on loopback with two tools (tool_01,
// tool_02) answering at once with 64 bytes of text, or with a tool error
// when failing. It returns its MCP endpoint.
func startUpstream(t *testing.T, failing bool) (*mockupstream.Local, string) {
	t.Helper()
	b := mockupstream.Behavior{Seed: 1, ToolCount: 2, Sizes: []mockupstream.Size{{Weight: 1, Bytes: 64}}}
	if failing {
		b.ToolErrors = 1
	}
	l := mockupstream.StartT(t, mockupstream.Config{Behavior: b, Logger: quiet})
	return l, l.URL + "/mcp"
}

// TestMockUpstream_SDKClient drives the mock upstream with the SDK's client
// on every revision it serves. It proves the handshake (the revision
// offered is answered; the mock assigns no session, which the transport
// allows), that the SDK accepts every tool listed, that a result and a
// tool error reach the client as such and an unknown tool is a JSON-RPC
// error, and that every HTTP exchange has a status and content type the
// transport allows (the mock has no GET stream: 405).
func TestMockUpstream_SDKClient(t *testing.T) {
	forEachRevision(t, mockRevisions, func(t *testing.T, rev string) {
		up, url := startUpstream(t, false)
		wl := newWireLog(t, "")
		cs := connectSDK(t, url, wl, rev)
		ctx := testContext(t)

		ir := cs.InitializeResult()
		assert.Equal(t, rev, ir.ProtocolVersion, "a supported revision offered is answered")
		require.NotNil(t, ir.ServerInfo)
		assert.Equal(t, "mockupstream", ir.ServerInfo.Name)
		require.NotNil(t, ir.Capabilities)
		assert.NotNil(t, ir.Capabilities.Tools, "the tools capability")
		assert.Empty(t, cs.ID(), "the mock assigns no session id")

		// The SDK drops the tools it finds invalid: each must survive.
		lt, err := cs.ListTools(ctx, nil)
		require.NoError(t, err)
		assert.Equal(t, []string{"tool_01", "tool_02"}, toolNames(lt.Tools))

		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "tool_01", Arguments: map[string]any{"query": "x"}})
		require.NoError(t, err)
		assert.False(t, res.IsError)
		assert.Len(t, text(t, res), 64, "text of the configured size")

		b := up.Server.Behavior()
		b.ToolErrors = 1
		require.NoError(t, up.Server.SetBehavior(b))
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "tool_02", Arguments: map[string]any{"query": "x"}})
		require.NoError(t, err, "a tool error is a result")
		assert.True(t, res.IsError)
		assert.True(t, strings.HasPrefix(text(t, res), "mockupstream: "), "the mock's message: %q", text(t, res))

		_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "tool_99"})
		var werr *jsonrpc.Error
		require.ErrorAs(t, err, &werr, "an unknown tool is a protocol error")
		assert.Equal(t, jsonrpc.CodeInvalidParams, int(werr.Code))

		require.NoError(t, cs.Ping(ctx, nil))
		require.NoError(t, cs.Close())
		ex := wl.exchanges()
		checkTransport(t, ex, mockRevisions)
		assert.True(t, slices.ContainsFunc(ex, func(e exchange) bool {
			return e.Method == http.MethodGet && e.Status == http.StatusMethodNotAllowed
		}), "the SDK's GET for a standalone stream is refused: %+v", ex)
	})
}

// TestMockUpstream_SDKDefaultClient proves that the SDK's client with its
// defaults, which first tries server/discover at revision 2026-07-28, is
// refused (400: the mock does not speak 2026-07-28), falls back to the
// handshake and settles on the newest revision both know.
func TestMockUpstream_SDKDefaultClient(t *testing.T) {
	_, url := startUpstream(t, false)
	wl := newWireLog(t, "")
	cs := connectSDK(t, url, wl, "")
	assert.Equal(t, newestHandshakeRevision, cs.InitializeResult().ProtocolVersion)
	_, err := cs.ListTools(testContext(t), nil)
	require.NoError(t, err)
	require.NoError(t, cs.Close())
	checkDiscoverFallback(t, wl.exchanges())
	checkTransport(t, wl.exchanges(), mockRevisions)
}

// TestMockUpstream_UnknownRevision proves that the mock answers a revision
// it does not know with one it supports ("If the server supports the
// requested protocol version, it MUST respond with the same version.
// Otherwise, the server MUST respond with another protocol version it
// supports"): the SDK's client disconnects when answered with a revision
// it does not know.
func TestMockUpstream_UnknownRevision(t *testing.T) {
	_, url := startUpstream(t, false)
	cs := connectSDK(t, url, newWireLog(t, ""), "2025-01-01")
	assert.Contains(t, mockRevisions, cs.InitializeResult().ProtocolVersion)
	require.NoError(t, cs.Ping(testContext(t), nil))
}
