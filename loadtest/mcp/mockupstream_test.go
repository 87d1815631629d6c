package mcp_test

import (
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/httpc"
	"github.com/headroom-dev/headroom/loadtest/mcp"
	"github.com/headroom-dev/headroom/mockupstream"
)

// TestClient_AgainstMockUpstream runs the client against the project's mock
// upstream, which speaks the agreed contract: initialize, tools/list,
// tools/call with a bearer token.
func TestClient_AgainstMockUpstream(t *testing.T) {
	up, err := mockupstream.New(mockupstream.Config{Auth: mockupstream.AuthBearer, Token: "tok", Behavior: mockupstream.Behavior{ToolCount: 3}})
	require.NoError(t, err)
	srv := httptest.NewServer(up)
	t.Cleanup(srv.Close)
	hc, err := httpc.New(httpc.Options{})
	require.NoError(t, err)
	t.Cleanup(hc.Close)

	c, err := mcp.New(hc, mcp.Options{URL: srv.URL + "/mcp", Token: "tok"})
	require.NoError(t, err)
	resp := c.Initialize(t.Context())
	require.Equal(t, loadtest.OK, resp.Outcome, "err: %v", resp.Err)
	tools, resp := c.ListTools(t.Context())
	require.Equal(t, loadtest.OK, resp.Outcome, "err: %v", resp.Err)
	require.NotEmpty(t, tools)
	res, resp := c.CallTool(t.Context(), tools[0].Name, map[string]any{"q": "x"})
	require.Equal(t, loadtest.OK, resp.Outcome, "err: %v", resp.Err)
	assert.NotEmpty(t, res.Content)
	_, resp = c.CallTool(t.Context(), "no_such_tool", nil)
	assert.Equal(t, loadtest.AppError, resp.Outcome, "an unknown tool is a JSON-RPC error: %v", resp.Err)

	bad, err := mcp.New(hc, mcp.Options{URL: srv.URL + "/mcp", Token: "wrong"})
	require.NoError(t, err)
	assert.Equal(t, loadtest.HTTP4xx, bad.Initialize(t.Context()).Outcome)
}
