package mcp_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/httpc"
	"github.com/headroom-dev/headroom/loadtest/mcp"
	"github.com/headroom-dev/headroom/loadtest/sse"
)

// fakeMCP is an MCP endpoint whose tools misbehave on purpose, and which
// remembers the headers it saw.
type fakeMCP struct {
	mu       sync.Mutex
	versions []string // MCP-Protocol-Version of each request after initialize
	offered  []string // protocolVersion offered in initialize
	methods  []string
	release  chan struct{}
}

func (f *fakeMCP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer secret" {
		http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
		return
	}
	if r.Method == "GET" {
		f.stream(w, r)
		return
	}
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			ProtocolVersion string          `json:"protocolVersion"`
			Name            string          `json:"name"`
			Arguments       json.RawMessage `json:"arguments"`
		} `json:"params"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, "bad json", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.methods = append(f.methods, req.Method)
	if req.Method != "initialize" {
		f.versions = append(f.versions, r.Header.Get(mcp.VersionHeader))
	}
	f.mu.Unlock()
	if req.Method != "initialize" && r.Header.Get(mcp.SessionHeader) != "sess-1" {
		http.Error(w, "missing session", http.StatusBadRequest)
		return
	}
	reply := func(v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": v})
	}
	switch req.Method {
	case "initialize":
		f.mu.Lock()
		f.offered = append(f.offered, req.Params.ProtocolVersion)
		f.mu.Unlock()
		w.Header().Set(mcp.SessionHeader, "sess-1")
		reply(map[string]any{"protocolVersion": req.Params.ProtocolVersion, "serverInfo": map[string]string{"name": "fake"}})
	case "notifications/initialized":
		w.WriteHeader(http.StatusAccepted)
	case "tools/list":
		reply(map[string]any{"tools": []map[string]any{{"name": "up__echo", "description": "echoes", "inputSchema": map[string]any{"type": "object"}}}})
	case "tools/call":
		f.tool(w, r, req.ID, req.Params.Name, req.Params.Arguments, reply)
	default:
		_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": map[string]any{"code": -32601, "message": "method not found"}})
	}
}

func (f *fakeMCP) tool(w http.ResponseWriter, r *http.Request, id json.RawMessage, name string, args json.RawMessage, reply func(any)) {
	switch name {
	case "echo":
		reply(map[string]any{"content": []map[string]string{{"type": "text", "text": string(args)}}, "isError": false})
	case "fail":
		reply(map[string]any{"content": []map[string]string{{"type": "text", "text": "upstream down"}}, "isError": true})
	case "rpcerr":
		_, _ = fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32602,"message":"unknown tool"}}`, id)
	case "http500":
		http.Error(w, "boom", http.StatusInternalServerError)
	case "http429":
		http.Error(w, "slow down", http.StatusTooManyRequests)
	case "badid":
		_, _ = fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s0,"result":{"content":[]}}`, id)
	case "badjson":
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`)
	case "noresult":
		_, _ = fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s}`, id)
	case "sse":
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n")
		_, _ = fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\n", id)
		_, _ = fmt.Fprintf(w, "data: \"result\":{\"content\":[{\"type\":\"text\",\"text\":\"streamed\"}]}}\n\n")
	case "slow":
		select {
		case <-r.Context().Done():
		case <-f.release:
		}
	}
}

// stream is the user's notification stream: one event stamped now.
func (f *fakeMCP) stream(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Accept") != "text/event-stream" || r.Header.Get(mcp.SessionHeader) != "sess-1" {
		http.Error(w, "want an event stream on a session", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	_, _ = fmt.Fprintf(w, "id: 1\nevent: call\ndata: {\"id\":1,\"tool\":\"up__echo\",\"outcome\":\"ok\",\"written_at\":%q}\n\n", time.Now().UTC().Format(time.RFC3339Nano))
	_ = http.NewResponseController(w).Flush()
	select {
	case <-r.Context().Done():
	case <-f.release:
	}
}

func setup(t *testing.T, opts mcp.Options) (*fakeMCP, *httptest.Server, *httpc.Client, *mcp.Client) {
	t.Helper()
	f := &fakeMCP{release: make(chan struct{})}
	srv := httptest.NewServer(f)
	t.Cleanup(func() { close(f.release); srv.Close() })
	hc, err := httpc.New(httpc.Options{Timeout: 5 * time.Second})
	require.NoError(t, err)
	t.Cleanup(hc.Close)
	opts.URL = srv.URL + "/mcp"
	if opts.Token == "" {
		opts.Token = "secret"
	}
	c, err := mcp.New(hc, opts)
	require.NoError(t, err)
	return f, srv, hc, c
}

func TestClient_Flow(t *testing.T) {
	f, _, _, c := setup(t, mcp.Options{})
	resp := c.Initialize(t.Context())
	require.Equal(t, loadtest.OK, resp.Outcome, "err: %v", resp.Err)
	assert.Equal(t, "sess-1", c.SessionID())
	assert.Equal(t, mcp.DefaultProtocolVersion, c.ProtocolVersion())
	assert.Contains(t, string(c.ServerInfo()), `"fake"`)

	tools, resp := c.ListTools(t.Context())
	require.Equal(t, loadtest.OK, resp.Outcome, "err: %v", resp.Err)
	require.Len(t, tools, 1)
	assert.Equal(t, "up__echo", tools[0].Name)
	assert.JSONEq(t, `{"type":"object"}`, string(tools[0].InputSchema))

	res, resp := c.CallTool(t.Context(), "echo", map[string]any{"q": "hi", "n": 2})
	require.Equal(t, loadtest.OK, resp.Outcome, "err: %v", resp.Err)
	require.Len(t, res.Content, 1)
	assert.JSONEq(t, `{"q":"hi","n":2}`, res.Content[0].Text)
	assert.Positive(t, resp.Bytes)

	f.mu.Lock()
	defer f.mu.Unlock()
	assert.Equal(t, []string{"initialize", "notifications/initialized", "tools/list", "tools/call"}, f.methods)
}

func TestClient_ErrorMapping(t *testing.T) {
	_, _, _, c := setup(t, mcp.Options{Timeout: 100 * time.Millisecond})
	require.Equal(t, loadtest.OK, c.Initialize(t.Context()).Outcome)
	tests := []struct {
		tool    string
		want    loadtest.Outcome
		errText string
	}{
		// A result: OK.
		{"echo", loadtest.OK, ""},
		// isError: a tool error.
		{"fail", loadtest.AppError, "upstream down"},
		// A JSON-RPC error object: an application error that keeps the code.
		{"rpcerr", loadtest.AppError, "-32602"},
		// HTTP failures keep their HTTP outcome.
		{"http500", loadtest.HTTP5xx, "boom"},
		// Rate limited.
		{"http429", loadtest.HTTP4xx, "slow down"},
		// The answer names another id.
		{"badid", loadtest.ProtocolError, "does not match request id"},
		// Cut-off JSON.
		{"badjson", loadtest.ProtocolError, "not a JSON-RPC object"},
		// Neither result nor error.
		{"noresult", loadtest.ProtocolError, "neither result nor error"},
		// The answer framed as an event stream, after a notification.
		{"sse", loadtest.OK, ""},
		// The per-request timeout.
		{"slow", loadtest.Timeout, ""},
	}
	for _, tt := range tests {
		t.Run("tool="+tt.tool, func(t *testing.T) {
			res, resp := c.CallTool(t.Context(), tt.tool, nil)
			assert.Equal(t, tt.want, resp.Outcome, "err: %v", resp.Err)
			if tt.errText != "" {
				assert.ErrorContains(t, resp.Err, tt.errText)
			}
			switch tt.tool {
			case "rpcerr":
				var rerr *mcp.RPCError
				require.ErrorAs(t, resp.Err, &rerr)
				assert.Equal(t, -32602, rerr.Code)
			case "fail":
				var terr *mcp.ToolError
				require.ErrorAs(t, resp.Err, &terr)
				require.NotNil(t, res)
				assert.True(t, res.IsError)
			case "sse":
				require.NotNil(t, res)
				assert.Equal(t, "streamed", res.Content[0].Text)
			}
		})
	}
}

func TestClient_NoSessionIsHTTPError(t *testing.T) {
	_, _, _, c := setup(t, mcp.Options{})
	_, resp := c.ListTools(t.Context()) // no initialize: no session header
	assert.Equal(t, loadtest.HTTP4xx, resp.Outcome)
	_, _, _, bad := setup(t, mcp.Options{Token: "wrong"})
	assert.Equal(t, loadtest.HTTP4xx, bad.Initialize(t.Context()).Outcome)
}

func TestClient_ProtocolRevision(t *testing.T) {
	tests := []struct {
		version    string
		wantHeader string
	}{
		// The current revision sends MCP-Protocol-Version after initialize.
		{"2025-06-18", "2025-06-18"},
		// 2024-11-05 had no such header.
		{"2024-11-05", ""},
	}
	for _, tt := range tests {
		t.Run("version="+tt.version, func(t *testing.T) {
			f, _, _, c := setup(t, mcp.Options{ProtocolVersion: tt.version})
			require.Equal(t, loadtest.OK, c.Initialize(t.Context()).Outcome)
			_, resp := c.ListTools(t.Context())
			require.Equal(t, loadtest.OK, resp.Outcome)
			f.mu.Lock()
			defer f.mu.Unlock()
			assert.Equal(t, []string{tt.version}, f.offered, "initialize params.protocolVersion")
			assert.Equal(t, []string{tt.wantHeader, tt.wantHeader}, f.versions, "header on the notification and tools/list")
		})
	}
}

func TestClient_Notifications(t *testing.T) {
	_, _, hc, c := setup(t, mcp.Options{})
	require.Equal(t, loadtest.OK, c.Initialize(t.Context()).Outcome)
	cfg := mcp.NotificationConfig(hc, c.URL(), nil)
	g, err := sse.NewGroup(cfg)
	require.NoError(t, err)
	s := c.OpenNotifications(t.Context(), g)
	s.Expect(1)
	require.Eventually(t, func() bool { return s.Stats().Events == 1 }, 10*time.Second, time.Millisecond)
	st := g.Close()
	assert.Equal(t, int64(0), st.Missing)
	assert.Equal(t, int64(1), st.FanoutSamples)
	assert.Equal(t, int64(0), st.ConnectErrors)
}

func TestNew_BadInput(t *testing.T) {
	hc, err := httpc.New(httpc.Options{})
	require.NoError(t, err)
	_, err = mcp.New(hc, mcp.Options{URL: "127.0.0.1:8080/mcp"})
	assert.ErrorContains(t, err, "URL")
	_, err = mcp.New(nil, mcp.Options{URL: "http://127.0.0.1/mcp"})
	assert.ErrorContains(t, err, "httpc.New")
}
