package mockupstream_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/mockupstream"
)

func TestJSONRPC_MalformedRequests(t *testing.T) {
	loc := start(t, instant(), mockupstream.HoldPark)
	for _, tc := range []struct {
		name string
		body string
		code int
		id   string // the id answered
	}{
		// Not JSON at all.
		{"code=-32700/garbage", `hello`, -32700, "null"},
		// Truncated JSON.
		{"code=-32700/truncated", `{"jsonrpc":"2.0","id":1,`, -32700, "null"},
		// Empty body.
		{"code=-32700/empty", ``, -32700, "null"},
		// A batch is not supported (MCP dropped batching).
		{"code=-32600/batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, -32600, "null"},
		// An empty batch is invalid in JSON-RPC itself.
		{"code=-32600/empty batch", `[]`, -32600, "null"},
		// A scalar is not a request.
		{"code=-32600/scalar", `42`, -32600, "null"},
		// Wrong protocol version.
		{"code=-32600/jsonrpc", `{"jsonrpc":"1.0","id":1,"method":"ping"}`, -32600, "1"},
		// Missing jsonrpc.
		{"code=-32600/no jsonrpc", `{"id":1,"method":"ping"}`, -32600, "1"},
		// Method is not a string.
		{"code=-32600/method type", `{"jsonrpc":"2.0","id":1,"method":5}`, -32600, "1"},
		// Method missing.
		{"code=-32600/no method", `{"jsonrpc":"2.0","id":1}`, -32600, "1"},
		// An object id is not allowed.
		{"code=-32600/id type", `{"jsonrpc":"2.0","id":{},"method":"ping"}`, -32600, "null"},
		// Params must be structured.
		{"code=-32600/params scalar", `{"jsonrpc":"2.0","id":1,"method":"ping","params":3}`, -32600, "1"},
		// An unknown method.
		{"code=-32601", `{"jsonrpc":"2.0","id":2,"method":"resources/list"}`, -32601, "2"},
		// tools/call without params.
		{"code=-32602/no params", `{"jsonrpc":"2.0","id":3,"method":"tools/call"}`, -32602, "3"},
		// tools/call without a name.
		{"code=-32602/no name", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"arguments":{}}}`, -32602, "3"},
		// tools/call with arguments that are not an object.
		{"code=-32602/arguments", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"tool_01","arguments":[1]}}`, -32602, "3"},
		// tools/call of an unknown tool.
		{"code=-32602/unknown tool", `{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"tool_99"}}`, -32602, `"c"`},
		// tools/list with params that are not an object.
		{"code=-32602/list params", `{"jsonrpc":"2.0","id":4,"method":"tools/list","params":[]}`, -32602, "4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := rpc(t, nil, loc.URL+"/mcp", tc.body)
			require.NotNil(t, a.Error, "want an error, got result %s", a.Result)
			assert.Equal(t, tc.code, a.Error.Code, a.Error.Message)
			assert.NotEmpty(t, a.Error.Message)
			assert.JSONEq(t, tc.id, string(a.ID))
			assert.Nil(t, a.Result)
		})
	}
	s := loc.Server.Stats()
	assert.Equal(t, int64(18), s.ByOutcome["rpc_error"])
	assert.Zero(t, s.InFlight)
}
