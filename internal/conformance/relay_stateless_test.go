package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// statelessMeta is the params._meta member of a request at the stateless
// revision, as the SDK's client sends it.
const statelessMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"conformance","version":"1"}}`

// rpcAnswer is what a server answered one POST with.
type rpcAnswer struct {
	Status      int
	ContentType string
	Body        []byte
	Result      map[string]json.RawMessage
	Error       *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
}

// postRPC posts body to url with the bearer token (none when "") and
// headers (name, value pairs), and decodes a JSON answer.
func postRPC(t *testing.T, url, token, body string, headers ...string) rpcAnswer {
	t.Helper()
	req, err := http.NewRequestWithContext(testContext(t), http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	a := rpcAnswer{Status: resp.StatusCode, ContentType: mediaType(resp.Header.Get("Content-Type"))}
	a.Body, err = io.ReadAll(resp.Body)
	require.NoError(t, err)
	if a.ContentType == "application/json" {
		var m struct {
			Result map[string]json.RawMessage `json:"result"`
			Error  *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(a.Body, &m) == nil {
			a.Result, a.Error = m.Result, m.Error
		}
	}
	return a
}

// TestRelay_StatelessLikeSDKServer sends the same requests of the
// stateless revision to a stateless SDK server and to the relay, and
// proves that the relay answers each as the SDK's server does: the same
// HTTP status and JSON-RPC error code, or a result with the server's
// identity in _meta. It covers server/discover, tools/list and tools/call
// with the MCP headers mirroring the body, each header that disagrees with
// the body (-32020, HTTP 400), the revision missing from params._meta
// (-32602, HTTP 400), and ping and initialize, which the revision removed
// (-32601, HTTP 404).
func TestRelay_StatelessLikeSDKServer(t *testing.T) {
	forEachRevision(t, []string{statelessRevision}, func(t *testing.T, rev string) {
		_, good := startUpstream(t, false)
		servers := []struct {
			name, url, token, tool string
		}{
			{"sdk", startSDKServer(t, nil, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}).URL, "", "echo"},
			{"relay", startRelay(t, connector{"good", good}), relayToken, "good__tool_01"},
		}
		const (
			vh = versionHeader
			mh = "Mcp-Method"
			nh = "Mcp-Name"
		)
		tests := []struct {
			name    string
			body    string // TOOL stands for the server's tool
			headers []string
			status  int
			code    int // 0: a result
		}{
			// server/discover, as the SDK's client sends it.
			{name: "discover", body: `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + statelessMeta + `}}`,
				headers: []string{vh, rev, mh, "server/discover"}, status: 200},
			// tools/list with the headers mirroring the body.
			{name: "list", body: `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{` + statelessMeta + `}}`,
				headers: []string{vh, rev, mh, "tools/list"}, status: 200},
			// tools/call with the headers mirroring the body.
			{name: "call", body: `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"TOOL","arguments":{"text":"x"},` + statelessMeta + `}}`,
				headers: []string{vh, rev, mh, "tools/call", nh, "TOOL"}, status: 200},
			// Mcp-Method names another method.
			{name: "method_mismatch", body: `{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{` + statelessMeta + `}}`,
				headers: []string{vh, rev, mh, "tools/call"}, status: 400, code: int(mcp.CodeHeaderMismatch)},
			// Mcp-Name names another tool.
			{name: "name_mismatch", body: `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"TOOL","arguments":{"text":"x"},` + statelessMeta + `}}`,
				headers: []string{vh, rev, mh, "tools/call", nh, "TOOL_other"}, status: 400, code: int(mcp.CodeHeaderMismatch)},
			// The header names an older revision than _meta.
			{name: "version_header_older", body: `{"jsonrpc":"2.0","id":6,"method":"tools/list","params":{` + statelessMeta + `}}`,
				headers: []string{vh, "2025-11-25", mh, "tools/list"}, status: 400, code: int(mcp.CodeHeaderMismatch)},
			// _meta names an older revision than the header.
			{name: "version_meta_older", body: `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{` + strings.Replace(statelessMeta, rev, "2025-11-25", 1) + `}}`,
				headers: []string{vh, rev, mh, "tools/list"}, status: 400, code: int(mcp.CodeHeaderMismatch)},
			// The header names the revision, _meta does not.
			{name: "no_meta", body: `{"jsonrpc":"2.0","id":8,"method":"tools/list","params":{}}`,
				headers: []string{vh, rev, mh, "tools/list"}, status: 400, code: -32602},
			// ping without _meta, as the SDK's client sends it.
			{name: "ping_no_meta", body: `{"jsonrpc":"2.0","id":9,"method":"ping"}`,
				headers: []string{vh, rev, mh, "ping"}, status: 400, code: -32602},
			// ping is gone from the revision.
			{name: "ping", body: `{"jsonrpc":"2.0","id":10,"method":"ping","params":{` + statelessMeta + `}}`,
				headers: []string{vh, rev, mh, "ping"}, status: 404, code: -32601},
			// So is initialize.
			{name: "initialize", body: `{"jsonrpc":"2.0","id":11,"method":"initialize","params":{"protocolVersion":"2026-07-28","capabilities":{},"clientInfo":{"name":"c","version":"1"},` + statelessMeta + `}}`,
				headers: []string{vh, rev, mh, "initialize"}, status: 404, code: -32601},
		}
		for _, tc := range tests {
			t.Run("request="+tc.name, func(t *testing.T) {
				for _, s := range servers {
					body := strings.ReplaceAll(tc.body, "TOOL", s.tool)
					headers := make([]string, len(tc.headers))
					for i, h := range tc.headers {
						headers[i] = strings.ReplaceAll(h, "TOOL", s.tool)
					}
					a := postRPC(t, s.url, s.token, body, headers...)
					assert.Equal(t, tc.status, a.Status, "%s: %s", s.name, a.Body)
					require.Equal(t, "application/json", a.ContentType, "%s: %s", s.name, a.Body)
					if tc.code != 0 {
						if assert.NotNil(t, a.Error, "%s: %s", s.name, a.Body) {
							assert.Equal(t, tc.code, a.Error.Code, "%s: %s", s.name, a.Body)
						}
						continue
					}
					require.Nil(t, a.Error, "%s: %s", s.name, a.Body)
					var meta map[string]json.RawMessage
					require.NoError(t, json.Unmarshal(a.Result["_meta"], &meta), "%s: the result's _meta: %s", s.name, a.Body)
					var info mcp.Implementation
					require.NoError(t, json.Unmarshal(meta[mcp.MetaKeyServerInfo], &info), "%s: serverInfo: %s", s.name, a.Body)
					assert.NotEmpty(t, info.Name, "%s: serverInfo", s.name)
				}
			})
		}
	})
}

// listenTee is the SDK client's http.RoundTripper in front of a wireLog:
// it keeps what the client reads of its subscriptions/listen answers.
type listenTee struct {
	next http.RoundTripper

	mu   sync.Mutex
	read bytes.Buffer
	grew chan struct{}
}

func (l *listenTee) RoundTrip(r *http.Request) (*http.Response, error) {
	var listen bool
	if r.Method == http.MethodPost && r.Body != nil {
		b, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return nil, err
		}
		r = r.Clone(r.Context())
		r.Body = io.NopCloser(bytes.NewReader(b))
		method, _ := rpcMethod(b)
		listen = method == "subscriptions/listen"
	}
	resp, err := l.next.RoundTrip(r)
	if err == nil && listen {
		resp.Body = &listenBody{ReadCloser: resp.Body, l: l}
	}
	return resp, err
}

type listenBody struct {
	io.ReadCloser
	l *listenTee
}

func (b *listenBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.l.mu.Lock()
		b.l.read.Write(p[:n])
		b.l.mu.Unlock()
		select {
		case b.l.grew <- struct{}{}:
		default:
		}
	}
	return n, err
}

// count returns how many times the client has read s on its listen streams.
func (l *listenTee) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.read.String(), s)
}

// wait waits until the client has read s n times on its listen streams.
func (l *listenTee) wait(t *testing.T, ctx context.Context, s string, n int) {
	t.Helper()
	for l.count(s) < n {
		select {
		case <-l.grew:
		case <-ctx.Done():
			t.Fatalf("the SDK client did not read %q %d times on its listen streams: %v", s, n, ctx.Err())
		}
	}
}

// TestRelay_SDKListen subscribes with the SDK's client at the stateless
// revision, through subscriptions/listen (ClientSession.Subscribe opens
// one per resource), and proves that the relay's stream is one the SDK
// keeps: it reads the acknowledgment first (the relay honors none of the
// notifications asked for), skips the relay's own "event: call" frames
// while the session goes on, ends the subscription when the client
// cancels it (Unsubscribe), and on drain sends the request's result, with
// which the SDK's Subscribe returns without error.
func TestRelay_SDKListen(t *testing.T) {
	forEachRevision(t, []string{statelessRevision}, func(t *testing.T, rev string) {
		_, good := startUpstream(t, false)
		relay, url := startRelayServer(t, connector{"good", good})
		wl := newWireLog(t, relayToken)
		tee := &listenTee{next: wl, grew: make(chan struct{}, 1)}
		c := mcp.NewClient(&mcp.Implementation{Name: "conformance", Version: "1"}, nil)
		tr := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: tee}, MaxRetries: -1}
		ctx := testContext(t)
		cs, err := c.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: rev})
		require.NoError(t, err)
		t.Cleanup(func() { cs.Close() })
		require.Equal(t, rev, cs.InitializeResult().ProtocolVersion)

		subscribe := func(uri string) <-chan error {
			done := make(chan error, 1)
			go func() { done <- cs.Subscribe(context.WithoutCancel(ctx), &mcp.SubscribeParams{URI: uri}) }()
			return done
		}
		const ack = `"method":"notifications/subscriptions/acknowledged","params":{"notifications":{}`

		// A subscription the client cancels.
		first := subscribe("relay://first")
		tee.wait(t, ctx, ack, 1)
		assert.EqualValues(t, 1, relay.Stats().UserStreams, "the listen stream is a held user stream")
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "good__tool_01", Arguments: map[string]any{"query": "x"}})
		require.NoError(t, err)
		assert.False(t, res.IsError)
		tee.wait(t, ctx, "event: call", 1)
		_, err = cs.ListTools(ctx, nil)
		require.NoError(t, err, "the session after the relay's events on the listen stream")
		require.NoError(t, cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "relay://first"}))
		select {
		case <-first: // cancelled: the error is the SDK's to choose
		case <-ctx.Done():
			t.Fatal("Subscribe did not return after Unsubscribe")
		}
		for relay.Stats().UserStreams != 0 {
			select {
			case <-ctx.Done():
				t.Fatal("the relay kept the stream of a cancelled subscription")
			case <-time.After(5 * time.Millisecond):
			}
		}

		// A subscription the relay ends on drain.
		second := subscribe("relay://second")
		tee.wait(t, ctx, ack, 2)
		_, err = relay.Shutdown(ctx)
		require.NoError(t, err)
		select {
		case err := <-second:
			assert.NoError(t, err, "the subscription's result ends Subscribe")
		case <-ctx.Done():
			t.Fatal("Subscribe did not return after the drain")
		}
		assert.Equal(t, 1, tee.count(`"result":{"_meta":{"io.modelcontextprotocol/subscriptionId":`), "the final result, once")

		var listens int
		for _, e := range wl.exchanges() {
			if e.RPCMethod == "subscriptions/listen" {
				listens++
				assert.Equal(t, http.StatusOK, e.Status)
				assert.Equal(t, "text/event-stream", mediaType(e.ContentType))
				assert.Equal(t, rev, e.Version)
			}
		}
		assert.Equal(t, 2, listens)
	})
}
