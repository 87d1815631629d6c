package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/httpc"
	lean "github.com/headroom-dev/headroom/loadtest/mcp"
	"github.com/headroom-dev/headroom/loadtest/sse"
)

// leanClientRevisions are the revisions loadtest/mcp claims. It sends
// whatever revision Options.ProtocolVersion names (default 2025-06-18) and
// tells apart the revisions before 2025-06-18, which have no
// MCP-Protocol-Version header, from those from 2025-06-18 on, which have it
// (client.go: newCall, StreamHeaders); its own tests use 2024-11-05 and
// 2025-06-18. That covers every revision negotiated with initialize.
var leanClientRevisions = []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"}

// echoIn and echoOut are the arguments and structured result of the SDK
// server's echo tool.
type echoIn struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

type echoOut struct {
	Echo   string `json:"echo"`
	Length int    `json:"length"`
}

// failIn are the arguments of the SDK server's fail tool.
type failIn struct {
	Reason string `json:"reason"`
}

func echo(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, echoOut, error) {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + in.Text}}},
		echoOut{Echo: in.Text, Length: len(in.Text)}, nil
}

func fail(_ context.Context, _ *mcp.CallToolRequest, in failIn) (*mcp.CallToolResult, any, error) {
	// A handler's error is a tool error: the SDK answers a result with
	// isError true and the error as text.
	return nil, nil, fmt.Errorf("failed: %s", in.Reason)
}

// sdkServer is an MCP server built with the SDK, with tools echo and fail,
// served over Streamable HTTP on loopback.
type sdkServer struct {
	*mcp.Server
	// URL is the MCP endpoint.
	URL string
	// log has every request the server was sent.
	log *requestLog
	// initialized is closed when a notifications/initialized arrives.
	initialized chan struct{}
}

// startSDKServer starts an SDK server. versions, when not empty, narrows
// the revisions it negotiates; httpOpts configures its HTTP handler.
func startSDKServer(t *testing.T, versions []string, httpOpts *mcp.StreamableHTTPOptions) *sdkServer {
	t.Helper()
	s := &sdkServer{initialized: make(chan struct{})}
	var once sync.Once
	s.Server = mcp.NewServer(&mcp.Implementation{Name: "sdk-server", Version: "1"}, &mcp.ServerOptions{
		SupportedProtocolVersions: versions,
		InitializedHandler: func(context.Context, *mcp.InitializedRequest) {
			once.Do(func() { close(s.initialized) })
		},
	})
	mcp.AddTool(s.Server, &mcp.Tool{Name: "echo", Description: "Echoes its text."}, echo)
	mcp.AddTool(s.Server, &mcp.Tool{Name: "fail", Description: "Fails with its reason."}, fail)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.Server }, httpOpts)
	s.log = &requestLog{t: t, next: h}
	ts := httptest.NewServer(s.log)
	t.Cleanup(ts.Close)
	s.URL = ts.URL + "/mcp"
	return s
}

// session returns the server's only session.
func (s *sdkServer) session(t *testing.T) *mcp.ServerSession {
	t.Helper()
	var all []*mcp.ServerSession
	for ss := range s.Sessions() {
		all = append(all, ss)
	}
	require.Len(t, all, 1, "server sessions")
	return all[0]
}

// waitInitialized waits for the server to receive notifications/initialized.
func (s *sdkServer) waitInitialized(t *testing.T, ctx context.Context) {
	t.Helper()
	select {
	case <-s.initialized:
	case <-ctx.Done():
		t.Fatal("the SDK server never got notifications/initialized")
	}
}

// newLeanClient returns a lean client of the MCP endpoint url offering
// revision rev, and its HTTP client.
func newLeanClient(t *testing.T, url, rev string) (*lean.Client, *httpc.Client) {
	t.Helper()
	hc, err := httpc.New(httpc.Options{Timeout: timeout})
	require.NoError(t, err)
	t.Cleanup(hc.Close)
	c, err := lean.New(hc, lean.Options{URL: url, ProtocolVersion: rev})
	require.NoError(t, err)
	return c, hc
}

// checkLeanHeaders checks the MCP headers of every request after
// initialize: the session id the server assigned and, from 2025-06-18 on,
// the negotiated revision ("the client MUST include the
// MCP-Protocol-Version: <protocol-version> HTTP header on all subsequent
// requests"); before 2025-06-18 the header did not exist.
func checkLeanHeaders(t *testing.T, reqs []request, session, negotiated string) {
	t.Helper()
	wantVersion := ""
	if negotiated >= firstHeaderRevision {
		wantVersion = negotiated
	}
	require.NotEmpty(t, reqs)
	assert.Equal(t, "initialize", reqs[0].RPCMethod, "the first request")
	assert.Empty(t, reqs[0].Session, "initialize carries no session id")
	for i, r := range reqs {
		what := fmt.Sprintf("%d: %s %s", i, r.Method, r.RPCMethod)
		if r.Method == http.MethodPost {
			// "The client MUST include an Accept header, listing both
			// application/json and text/event-stream as supported".
			assert.True(t, accepts(r.Accept, "application/json") && accepts(r.Accept, "text/event-stream"), "%s: Accept %q", what, r.Accept)
			assert.Equal(t, "application/json", mediaType(r.ContentType), what)
		}
		if i == 0 {
			continue
		}
		assert.Equal(t, session, r.Session, "%s: %s", what, sessionHeader)
		assert.Equal(t, wantVersion, r.Version, "%s: %s", what, versionHeader)
	}
}

// answerModes are the ways an SDK server answers a POST: as an event
// stream (its default), as JSON, and as a resumable event stream, which
// from 2025-11-25 on starts with a priming event (an id and empty data).
var answerModes = []struct {
	name string
	opts func() *mcp.StreamableHTTPOptions
}{
	{"sse", func() *mcp.StreamableHTTPOptions { return nil }},
	{"json", func() *mcp.StreamableHTTPOptions { return &mcp.StreamableHTTPOptions{JSONResponse: true} }},
	{"resumable", func() *mcp.StreamableHTTPOptions {
		return &mcp.StreamableHTTPOptions{EventStore: mcp.NewMemoryEventStore(nil)}
	}},
}

// TestLeanClient_SDKServer runs the lean client's session against an SDK
// server on every revision and in every answer mode. It proves the client
// negotiates the revision it offers, keeps and sends the session id and
// the revision header, lists tools, and tells a result, a tool error
// (isError) and a JSON-RPC error apart.
func TestLeanClient_SDKServer(t *testing.T) {
	forEachRevision(t, leanClientRevisions, func(t *testing.T, rev string) {
		for _, mode := range answerModes {
			t.Run("answers="+mode.name, func(t *testing.T) {
				srv := startSDKServer(t, nil, mode.opts())
				c, _ := newLeanClient(t, srv.URL, rev)
				ctx := testContext(t)

				session := leanHandshake(t, ctx, srv, c, rev)
				leanListTools(t, ctx, c)
				leanCallTools(t, ctx, c)

				reqs := srv.log.requests()
				var methods []string
				for _, r := range reqs {
					methods = append(methods, r.RPCMethod)
				}
				assert.Equal(t, []string{"initialize", "notifications/initialized", "tools/list", "tools/call", "tools/call", "tools/call"}, methods)
				checkLeanHeaders(t, reqs, session, rev)
			})
		}
	})
}

// leanHandshake initializes c with the SDK server, checks both sides agree
// on revision rev and the session, and returns the session id.
func leanHandshake(t *testing.T, ctx context.Context, srv *sdkServer, c *lean.Client, rev string) string {
	t.Helper()
	resp := c.Initialize(ctx)
	require.Equal(t, loadtest.OK, resp.Outcome, "initialize: %v", resp.Err)
	assert.Equal(t, rev, c.ProtocolVersion(), "the SDK answers a revision it supports with that revision")
	srv.waitInitialized(t, ctx)
	ss := srv.session(t)
	assert.Equal(t, ss.ID(), c.SessionID(), "the client keeps the session id the server assigned")
	assert.Equal(t, rev, ss.InitializeParams().ProtocolVersion, "the revision offered")
	assert.Equal(t, "headroom", ss.InitializeParams().ClientInfo.Name)
	return ss.ID()
}

// leanListTools checks that c lists the SDK server's tools whole.
func leanListTools(t *testing.T, ctx context.Context, c *lean.Client) {
	t.Helper()
	tools, resp := c.ListTools(ctx)
	require.Equal(t, loadtest.OK, resp.Outcome, "tools/list: %v", resp.Err)
	require.Len(t, tools, 2)
	byName := map[string]lean.Tool{}
	for _, tl := range tools {
		byName[tl.Name] = tl
	}
	require.Contains(t, byName, "echo")
	require.Contains(t, byName, "fail")
	assert.Equal(t, "Echoes its text.", byName["echo"].Description)
	var schema struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	require.NoError(t, json.Unmarshal(byName["echo"].InputSchema, &schema))
	assert.Equal(t, "object", schema.Type)
	assert.Contains(t, schema.Properties, "text")
}

// leanCallTools checks that c gets a result from echo (its text and
// structured content), a tool error from fail, and a JSON-RPC error for an
// unknown tool.
func leanCallTools(t *testing.T, ctx context.Context, c *lean.Client) {
	t.Helper()
	res, resp := c.CallTool(ctx, "echo", map[string]any{"text": "hello"})
	require.Equal(t, loadtest.OK, resp.Outcome, "tools/call echo: %v", resp.Err)
	assert.False(t, res.IsError)
	assert.Equal(t, []lean.Content{{Type: "text", Text: "echo: hello"}}, res.Content)
	assert.JSONEq(t, `{"echo":"hello","length":5}`, string(res.StructuredContent))

	res, resp = c.CallTool(ctx, "fail", map[string]any{"reason": "on purpose"})
	require.Equal(t, loadtest.AppError, resp.Outcome, "tools/call fail: %v", resp.Err)
	var terr *lean.ToolError
	require.ErrorAs(t, resp.Err, &terr)
	assert.Equal(t, "fail", terr.Tool)
	assert.Contains(t, terr.Text, "failed: on purpose")
	require.NotNil(t, res)
	assert.True(t, res.IsError)

	// An unknown tool is a protocol error, not a tool error.
	res, resp = c.CallTool(ctx, "no_such_tool", nil)
	require.Equal(t, loadtest.AppError, resp.Outcome, "tools/call no_such_tool: %v", resp.Err)
	assert.Nil(t, res)
	var rerr *lean.RPCError
	require.ErrorAs(t, resp.Err, &rerr)
	assert.Equal(t, -32602, rerr.Code)
}

// TestLeanClient_AdoptsNegotiatedRevision proves that the client uses the
// revision the server answers, not the one it offered, when they differ
// ("If the server supports the requested protocol version, it MUST respond
// with the same version. Otherwise, the server MUST respond with another
// protocol version it supports"), in the header too: the SDK server
// rejects a header naming a revision it does not support with 400.
func TestLeanClient_AdoptsNegotiatedRevision(t *testing.T) {
	tests := []struct {
		offered, served string
	}{
		// Down to a revision without the header: none is sent.
		{"2025-06-18", "2025-03-26"},
		// Up to a revision with the header: the served one is sent.
		{"2024-11-05", "2025-11-25"},
	}
	for _, tt := range tests {
		t.Run("offered="+tt.offered+"/served="+tt.served, func(t *testing.T) {
			srv := startSDKServer(t, []string{tt.served}, nil)
			c, _ := newLeanClient(t, srv.URL, tt.offered)
			ctx := testContext(t)
			resp := c.Initialize(ctx)
			require.Equal(t, loadtest.OK, resp.Outcome, "initialize: %v", resp.Err)
			assert.Equal(t, tt.served, c.ProtocolVersion())
			_, resp = c.ListTools(ctx)
			require.Equal(t, loadtest.OK, resp.Outcome, "tools/list: %v", resp.Err)
			checkLeanHeaders(t, srv.log.requests(), srv.session(t).ID(), tt.served)
		})
	}
}

// notification is a copy of one event of the lean client's notification
// stream.
type notification struct {
	Type string
	Data []byte
}

// connects is a loadtest.Sink that passes on the outcome of each connect
// attempt of a stream (sse.KindConnect, recorded once the answer's head is
// read) and drops the other samples.
type connects chan loadtest.Response

func (c connects) Record(kind string, _ time.Duration, r loadtest.Response) {
	if kind == sse.KindConnect {
		select {
		case c <- r:
		default:
		}
	}
}

// openStream opens c's notification stream in a group made from cfg and
// waits until it is connected; the stream's events are copied to the
// channel returned.
func openStream(t *testing.T, ctx context.Context, c *lean.Client, cfg sse.Config) (*sse.Group, <-chan notification) {
	t.Helper()
	connected := make(connects, 1)
	events := make(chan notification, 16)
	cfg.Sink = connected
	cfg.OnEvent = func(_ *sse.Stream, ev sse.Event, _ time.Time) {
		select {
		case events <- notification{Type: string(ev.Type), Data: append([]byte(nil), ev.Data...)}:
		default:
		}
	}
	g, err := sse.NewGroup(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { g.Close() })
	c.OpenNotifications(ctx, g)
	select {
	case r := <-connected:
		require.Equal(t, loadtest.OK, r.Outcome, "the stream's request: %v", r.Err)
	case <-ctx.Done():
		t.Fatal("the stream never connected")
	}
	return g, events
}

// TestLeanClient_NotificationStream proves that the client's notification
// stream (the GET of "Listening for Messages from the Server") is accepted
// by the SDK server on every revision, carrying the session id and, from
// 2025-06-18 on, the revision header, and that it receives the JSON-RPC
// notification the server sends outside any request: tools/list_changed
// when a tool is added.
func TestLeanClient_NotificationStream(t *testing.T) {
	forEachRevision(t, leanClientRevisions, func(t *testing.T, rev string) {
		srv := startSDKServer(t, nil, nil)
		c, hc := newLeanClient(t, srv.URL, rev)
		ctx := testContext(t)
		resp := c.Initialize(ctx)
		require.Equal(t, loadtest.OK, resp.Outcome, "initialize: %v", resp.Err)
		srv.waitInitialized(t, ctx)

		// The SDK server registers the stream before it answers the GET,
		// so a message sent once the client has the answer is delivered.
		g, events := openStream(t, ctx, c, lean.NotificationConfig(hc, c.URL(), nil))

		mcp.AddTool(srv.Server, &mcp.Tool{Name: "late"}, echo)
		var n notification
		select {
		case n = <-events:
		case <-ctx.Done():
			t.Fatal("no notification on the stream")
		}
		assert.Equal(t, "message", n.Type)
		var msg struct {
			JSONRPC string           `json:"jsonrpc"`
			ID      *json.RawMessage `json:"id"`
			Method  string           `json:"method"`
		}
		require.NoError(t, json.Unmarshal(n.Data, &msg), "%s", n.Data)
		assert.Equal(t, "2.0", msg.JSONRPC)
		assert.Nil(t, msg.ID, "a notification has no id")
		assert.Equal(t, "notifications/tools/list_changed", msg.Method)

		st := g.Close()
		assert.Zero(t, st.ProtocolErrors, "protocol errors on the stream")
		assert.Zero(t, st.ConnectErrors, "failed connects")

		reqs := srv.log.requests()
		var gets []request
		for _, r := range reqs {
			if r.Method == http.MethodGet {
				gets = append(gets, r)
			}
		}
		require.NotEmpty(t, gets, "the stream's GET")
		assert.True(t, accepts(gets[0].Accept, "text/event-stream"), "Accept %q", gets[0].Accept)
		checkLeanHeaders(t, reqs, srv.session(t).ID(), rev)
	})
}

// TestLeanClient_SDKServerStateless runs the lean client's work against a
// stateless SDK server at the stateless revision, in both answer modes:
// server/discover in place of the handshake, no session id, and on every
// request the revision in params._meta and the header, and the method
// (and the tool's name) mirrored in Mcp-Method (Mcp-Name); the SDK server
// refuses a request whose headers and body disagree.
func TestLeanClient_SDKServerStateless(t *testing.T) {
	rev := lean.StatelessVersion
	forEachRevision(t, []string{rev}, func(t *testing.T, rev string) {
		for _, mode := range answerModes[:2] {
			t.Run("answers="+mode.name, func(t *testing.T) {
				opts := mode.opts()
				if opts == nil {
					opts = &mcp.StreamableHTTPOptions{}
				}
				opts.Stateless = true
				srv := startSDKServer(t, nil, opts)
				c, _ := newLeanClient(t, srv.URL, rev)
				ctx := testContext(t)

				resp := c.Initialize(ctx)
				require.Equal(t, loadtest.OK, resp.Outcome, "server/discover: %v", resp.Err)
				assert.Empty(t, c.SessionID(), "no session in the stateless era")
				assert.Contains(t, string(c.ServerInfo()), `"supportedVersions"`)
				leanListTools(t, ctx, c)
				leanCallTools(t, ctx, c)

				reqs := srv.log.requests()
				var methods []string
				for _, r := range reqs {
					methods = append(methods, r.RPCMethod)
					what := r.Method + " " + r.RPCMethod
					assert.Empty(t, r.Session, "%s: %s", what, sessionHeader)
					assert.Equal(t, rev, r.Version, "%s: %s", what, versionHeader)
					assert.Equal(t, rev, r.Meta, "%s: params._meta revision", what)
					assert.Equal(t, r.RPCMethod, r.RPCHeader, "%s: Mcp-Method", what)
				}
				assert.Equal(t, []string{"server/discover", "tools/list", "tools/call", "tools/call", "tools/call"}, methods)
				assert.Equal(t, []string{"", "", "echo", "fail", "no_such_tool"}, func() (names []string) {
					for _, r := range reqs {
						names = append(names, r.NameHeader)
					}
					return names
				}(), "Mcp-Name mirrors the tool of each tools/call")
			})
		}
	})
}

// A server that does not list the stateless revision in server/discover
// (a handshake-era server answers it "method not found") fails the lean
// client's Initialize with the reason, not a session that half works.
func TestLeanClient_StatelessAgainstHandshakeServer(t *testing.T) {
	srv := startSDKServer(t, []string{"2025-11-25"}, nil)
	c, _ := newLeanClient(t, srv.URL, lean.StatelessVersion)
	resp := c.Initialize(testContext(t))
	require.NotEqual(t, loadtest.OK, resp.Outcome)
	require.Error(t, resp.Err)
	assert.Contains(t, resp.Err.Error(), "unsupported protocol version")
}

// TestLeanClient_ListenStream proves that the stateless era's notification
// stream — a subscriptions/listen request held open (ListenConfig) — is
// accepted by a stateless SDK server, which acknowledges it first and then
// sends tools/list_changed on it when a tool is added; both are JSON-RPC
// messages the stream sees (OnEvent) but does not count as deliveries.
func TestLeanClient_ListenStream(t *testing.T) {
	forEachRevision(t, []string{lean.StatelessVersion}, func(t *testing.T, rev string) {
		srv := startSDKServer(t, nil, &mcp.StreamableHTTPOptions{Stateless: true})
		c, hc := newLeanClient(t, srv.URL, rev)
		ctx := testContext(t)
		resp := c.Initialize(ctx)
		require.Equal(t, loadtest.OK, resp.Outcome, "server/discover: %v", resp.Err)

		g, events := openStream(t, ctx, c, lean.ListenConfig(hc, c.URL(), rev, nil))
		method := func() string {
			t.Helper()
			select {
			case n := <-events:
				var msg struct {
					Method string `json:"method"`
					Params struct {
						Notifications map[string]any `json:"notifications"`
					} `json:"params"`
				}
				require.NoError(t, json.Unmarshal(n.Data, &msg), "%s", n.Data)
				return msg.Method
			case <-ctx.Done():
				t.Fatal("no message on the listen stream")
				return ""
			}
		}
		assert.Equal(t, "notifications/subscriptions/acknowledged", method(), "the first message")
		mcp.AddTool(srv.Server, &mcp.Tool{Name: "late"}, echo)
		assert.Equal(t, "notifications/tools/list_changed", method())

		st := g.Close()
		assert.Zero(t, st.ProtocolErrors, "protocol errors on the stream")
		assert.Zero(t, st.ConnectErrors, "failed connects")
		for _, r := range srv.log.requests() {
			if r.RPCMethod == "subscriptions/listen" {
				assert.Equal(t, http.MethodPost, r.Method)
				assert.Equal(t, rev, r.Version)
				assert.Equal(t, rev, r.Meta)
				assert.Equal(t, "subscriptions/listen", r.RPCHeader)
				assert.True(t, accepts(r.Accept, "application/json") && accepts(r.Accept, "text/event-stream"), "Accept %q", r.Accept)
			}
		}
	})
}
