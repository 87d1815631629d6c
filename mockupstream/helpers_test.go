package mockupstream_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/mockupstream"
)

// holdModes are the two ways of holding a slow call; server tests run in both.
var holdModes = []mockupstream.HoldMode{mockupstream.HoldPark, mockupstream.HoldSleep}

// start runs a server with behaviour b on loopback for the test.
func start(t *testing.T, b mockupstream.Behavior, hold mockupstream.HoldMode) *mockupstream.Local {
	t.Helper()
	return mockupstream.StartT(t, mockupstream.Config{Behavior: b, Hold: hold})
}

// instant is a behaviour that answers everything at once, 100 bytes of text.
func instant() mockupstream.Behavior {
	return mockupstream.Behavior{Seed: 1, ToolCount: 20, Sizes: []mockupstream.Size{{Weight: 1, Bytes: 100}}}
}

// rpcAnswer is a JSON-RPC answer.
type rpcAnswer struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// callResult is the result of tools/call.
type callResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	IsError bool `json:"isError"`
}

// post sends body to url with c (a fresh client when nil) and returns the
// status and body.
func post(t *testing.T, c *http.Client, url, body string) (int, []byte) {
	t.Helper()
	if c == nil {
		c = newClient(10 * time.Second)
	}
	resp, err := c.Post(url, "application/json", bytes.NewBufferString(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, data
}

// rpc posts a JSON-RPC request and decodes the answer, which must be 200.
func rpc(t *testing.T, c *http.Client, url, body string) rpcAnswer {
	t.Helper()
	status, data := post(t, c, url, body)
	require.Equal(t, http.StatusOK, status, "body: %s", data)
	var a rpcAnswer
	require.NoError(t, json.Unmarshal(data, &a), "body: %s", data)
	require.Equal(t, "2.0", a.JSONRPC)
	return a
}

// toolCall returns a tools/call request.
func toolCall(id int, tool string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{"query":"x"}}}`, id, tool)
}

// newClient returns a client with its own connection pool.
func newClient(timeout time.Duration) *http.Client {
	tr := &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}
	return &http.Client{Transport: tr, Timeout: timeout}
}

// eventually waits (at most 10 s) until the stats satisfy ok.
func eventually(t *testing.T, loc *mockupstream.Local, ok func(mockupstream.Stats) bool, what string) mockupstream.Stats {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s := loc.Server.Stats()
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached in 10 s; stats %+v", what, s)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
