// Package relaytest has helpers for the relay's tests: a small MCP upstream
// speaking the contract's JSON-RPC, database population, an event-stream
// reader and a JSON-RPC caller.
package relaytest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
)

// Upstream is an in-process MCP upstream for tests: initialize, tools/list
// and tools/call on POST /mcp (and /), GET /healthz. A tool named "fail"
// answers isError true; any other echoes its arguments.
type Upstream struct {
	// URL is the MCP endpoint, ".../mcp".
	URL string
	// Tools are the tool names tools/list returns.
	Tools []string

	srv *httptest.Server

	mu     sync.Mutex
	status int           // answer every request with this HTTP status when not 0
	gate   chan struct{} // tools/call waits for it to close when not nil

	// Calls counts tools/call requests received; Lists tools/list requests.
	Calls, Lists atomic.Int64
	// InFlight is the number of tools/call requests being answered;
	// MaxInFlight the most at once.
	InFlight, MaxInFlight atomic.Int64
	// Cancelled counts tools/call requests whose client went away while
	// they were held.
	Cancelled atomic.Int64
}

// NewUpstream starts an upstream with the given tools (default "echo",
// "fail") and closes it in t.Cleanup.
func NewUpstream(t testing.TB, tools ...string) *Upstream {
	t.Helper()
	if len(tools) == 0 {
		tools = []string{"echo", "fail"}
	}
	u := &Upstream{Tools: tools}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /mcp", u.serve)
	mux.HandleFunc("POST /{$}", u.serve)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	u.srv = httptest.NewServer(mux)
	u.URL = u.srv.URL + "/mcp"
	t.Cleanup(func() {
		u.Release()
		u.srv.CloseClientConnections()
		u.srv.Close()
	})
	return u
}

// SetStatus makes every request answer with HTTP status code (0: normal).
func (u *Upstream) SetStatus(code int) {
	u.mu.Lock()
	u.status = code
	u.mu.Unlock()
}

// Hold makes tools/call requests wait until Release.
func (u *Upstream) Hold() {
	u.mu.Lock()
	if u.gate == nil {
		u.gate = make(chan struct{})
	}
	u.mu.Unlock()
}

// Release lets held and later tools/call requests answer.
func (u *Upstream) Release() {
	u.mu.Lock()
	if u.gate != nil {
		close(u.gate)
		u.gate = nil
	}
	u.mu.Unlock()
}

func (u *Upstream) serve(w http.ResponseWriter, r *http.Request) {
	u.mu.Lock()
	status, gate := u.status, u.gate
	u.mu.Unlock()
	body, _ := io.ReadAll(r.Body)
	if status != 0 {
		http.Error(w, "upstream configured to fail", status)
		return
	}
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"params"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		writeRPC(w, nil, nil, &rpcErr{-32700, "parse error"})
		return
	}
	switch req.Method {
	case "initialize":
		writeRPC(w, req.ID, map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{"tools": map[string]any{}},
			"serverInfo": map[string]any{"name": "relaytest-upstream", "version": "1"}}, nil)
	case "tools/list":
		u.Lists.Add(1)
		tools := make([]map[string]any, 0, len(u.Tools))
		for _, n := range u.Tools {
			tools = append(tools, map[string]any{"name": n, "description": "test tool " + n,
				"inputSchema": map[string]any{"type": "object"}})
		}
		writeRPC(w, req.ID, map[string]any{"tools": tools}, nil)
	case "tools/call":
		u.Calls.Add(1)
		n := u.InFlight.Add(1)
		for {
			m := u.MaxInFlight.Load()
			if n <= m || u.MaxInFlight.CompareAndSwap(m, n) {
				break
			}
		}
		defer u.InFlight.Add(-1)
		if gate != nil {
			select {
			case <-gate:
			case <-r.Context().Done():
				u.Cancelled.Add(1)
				return
			}
		}
		known := false
		for _, t := range u.Tools {
			known = known || t == req.Params.Name
		}
		if !known {
			writeRPC(w, req.ID, nil, &rpcErr{-32602, "unknown tool " + req.Params.Name})
			return
		}
		text := fmt.Sprintf("%s called with %s", req.Params.Name, req.Params.Arguments)
		writeRPC(w, req.ID, map[string]any{"content": []map[string]string{{"type": "text", "text": text}},
			"isError": req.Params.Name == "fail"}, nil)
	default:
		writeRPC(w, req.ID, nil, &rpcErr{-32601, "method not found"})
	}
}

type rpcErr struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func writeRPC(w http.ResponseWriter, id json.RawMessage, result any, e *rpcErr) {
	if id == nil {
		id = json.RawMessage("null")
	}
	resp := map[string]any{"jsonrpc": "2.0", "id": id}
	if e != nil {
		resp["error"] = e
	} else {
		resp["result"] = result
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(resp)
}
