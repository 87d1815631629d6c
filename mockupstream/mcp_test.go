package mockupstream_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/mockupstream"
)

func TestMCP_Methods(t *testing.T) {
	loc := start(t, instant(), mockupstream.HoldPark)
	for _, path := range []string{"/mcp", "/"} {
		t.Run("path="+path, func(t *testing.T) {
			url := loc.URL + path

			a := rpc(t, nil, url, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
			var init struct {
				ProtocolVersion string         `json:"protocolVersion"`
				Capabilities    map[string]any `json:"capabilities"`
				ServerInfo      struct{ Name string }
			}
			require.NoError(t, json.Unmarshal(a.Result, &init))
			assert.Equal(t, "2025-03-26", init.ProtocolVersion, "echoes the client's version")
			assert.Contains(t, init.Capabilities, "tools")
			assert.Equal(t, "mockupstream", init.ServerInfo.Name)
			assert.JSONEq(t, "1", string(a.ID))

			a = rpc(t, nil, url, `{"jsonrpc":"2.0","id":"list-1","method":"tools/list"}`)
			var list struct{ Tools []mockupstream.Tool }
			require.NoError(t, json.Unmarshal(a.Result, &list))
			require.Len(t, list.Tools, 20)
			assert.Equal(t, "tool_01", list.Tools[0].Name)
			assert.Equal(t, "tool_20", list.Tools[19].Name)
			for _, tool := range list.Tools {
				assert.NotEmpty(t, tool.Description)
				var schema map[string]any
				require.NoError(t, json.Unmarshal(tool.InputSchema, &schema))
				assert.Equal(t, "object", schema["type"])
			}
			assert.JSONEq(t, `"list-1"`, string(a.ID))

			a = rpc(t, nil, url, toolCall(7, "tool_05"))
			var res callResult
			require.NoError(t, json.Unmarshal(a.Result, &res))
			require.Len(t, res.Content, 1)
			assert.Equal(t, "text", res.Content[0].Type)
			assert.Len(t, res.Content[0].Text, 100, "text of the configured size")
			assert.False(t, res.IsError)

			a = rpc(t, nil, url, `{"jsonrpc":"2.0","id":8,"method":"ping"}`)
			assert.JSONEq(t, `{}`, string(a.Result))

			status, body := post(t, nil, url, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			assert.Equal(t, http.StatusAccepted, status)
			assert.Empty(t, body)
		})
	}
	s := loc.Server.Stats()
	assert.Equal(t, int64(10), s.Served)
	assert.Equal(t, int64(2), s.ByMethod["tools/call"])
	assert.Equal(t, int64(2), s.ByMethod["notification"])
	assert.Equal(t, int64(10), s.ByOutcome["ok"])
}

func TestMCP_WrongHTTPMethodAndPath(t *testing.T) {
	loc := start(t, instant(), mockupstream.HoldPark)
	resp, err := http.Get(loc.URL + "/mcp")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode, "GET /mcp: no server-initiated stream")
	assert.Contains(t, resp.Header.Get("Allow"), "POST")

	resp, err = http.Post(loc.URL+"/nope", "application/json", strings.NewReader(`{}`))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)

	big := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"` + strings.Repeat("a", 2<<20) + `"}}`
	status, _ := post(t, nil, loc.URL+"/mcp", big)
	assert.Equal(t, http.StatusRequestEntityTooLarge, status)
}
