package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// timeout bounds every exchange and wait of a test: generous for a shared
// machine, yet a hang ends.
const timeout = 20 * time.Second

// testContext returns a context that ends after timeout, or with the test.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	t.Cleanup(cancel)
	return ctx
}

// Protocol revisions and the headers of Streamable HTTP.
const (
	// versionHeader carries the negotiated revision on every request after
	// initialize, from revision 2025-06-18 on.
	versionHeader = "MCP-Protocol-Version"
	// sessionHeader carries the session id a server may assign in its
	// answer to initialize.
	sessionHeader = "Mcp-Session-Id"
	// firstHeaderRevision is the first revision with versionHeader.
	firstHeaderRevision = "2025-06-18"
	// newestHandshakeRevision is the newest revision the SDK negotiates with
	// initialize; from 2026-07-28 on it discovers the server with
	// server/discover instead, and falls back to initialize at this revision
	// when the server does not know server/discover.
	newestHandshakeRevision = "2025-11-25"
)

// forEachRevision runs f as subtest rev=<revision> for every revision an
// implementation claims, skipping those the SDK does not support.
func forEachRevision(t *testing.T, claimed []string, f func(t *testing.T, rev string)) {
	t.Helper()
	sdk := mcp.SupportedProtocolVersions()
	for _, rev := range claimed {
		t.Run("rev="+rev, func(t *testing.T) {
			if !slices.Contains(sdk, rev) {
				t.Skipf("the MCP Go SDK does not support revision %s (it supports %v)", rev, sdk)
			}
			f(t, rev)
		})
	}
}

// mediaType returns the media type of a Content-Type value, lower case and
// without parameters.
func mediaType(contentType string) string {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return strings.ToLower(strings.TrimSpace(contentType))
	}
	return mt
}

// accepts reports whether an Accept header value names media type mt.
func accepts(accept, mt string) bool {
	for part := range strings.SplitSeq(accept, ",") {
		if mediaType(part) == mt {
			return true
		}
	}
	return false
}

// rpcMethod returns the method of a JSON-RPC message and whether it is a
// request (a method and an id) rather than a notification or a response;
// "" for a body that is not one message.
func rpcMethod(body []byte) (method string, call bool) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(body, &m) != nil {
		return "", false
	}
	return m.Method, m.Method != "" && m.ID != nil
}

// readBody reads and restores a request body.
func readBody(t *testing.T, body *io.ReadCloser) []byte {
	if *body == nil || *body == http.NoBody {
		return nil
	}
	b, err := io.ReadAll(*body)
	(*body).Close()
	assert.NoError(t, err, "reading a request body")
	*body = io.NopCloser(bytes.NewReader(b))
	return b
}

// request is what a server was sent in one HTTP request.
type request struct {
	Method      string // the HTTP method
	RPCMethod   string // the JSON-RPC method of a POST
	Session     string // Mcp-Session-Id
	Version     string // MCP-Protocol-Version
	Accept      string
	ContentType string
	RPCHeader   string // Mcp-Method (stateless revision)
	NameHeader  string // Mcp-Name (stateless revision)
	Meta        string // params._meta's io.modelcontextprotocol/protocolVersion (stateless revision)
}

// requestLog is middleware that records every request before serving it.
type requestLog struct {
	t    *testing.T
	next http.Handler

	mu   sync.Mutex
	reqs []request
}

func (l *requestLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rq := request{
		Method:      r.Method,
		Session:     r.Header.Get(sessionHeader),
		Version:     r.Header.Get(versionHeader),
		Accept:      r.Header.Get("Accept"),
		ContentType: r.Header.Get("Content-Type"),
		RPCHeader:   r.Header.Get("Mcp-Method"),
		NameHeader:  r.Header.Get("Mcp-Name"),
	}
	if r.Method == http.MethodPost {
		body := readBody(l.t, &r.Body)
		rq.RPCMethod, _ = rpcMethod(body)
		var m struct {
			Params struct {
				Meta map[string]any `json:"_meta"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &m) == nil {
			rq.Meta, _ = m.Params.Meta["io.modelcontextprotocol/protocolVersion"].(string)
		}
	}
	l.mu.Lock()
	l.reqs = append(l.reqs, rq)
	l.mu.Unlock()
	l.next.ServeHTTP(w, r)
}

// requests returns the requests recorded so far.
func (l *requestLog) requests() []request {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.reqs)
}

// exchange is one HTTP exchange of the SDK's client with a server.
type exchange struct {
	Method      string // the HTTP method
	RPCMethod   string // the JSON-RPC method of a POST
	Call        bool   // the POST is a request (it has an id), not a notification
	Version     string // MCP-Protocol-Version of the request
	Status      int
	ContentType string // of the answer
	Session     string // Mcp-Session-Id of the answer
}

// wireLog is the SDK client's http.RoundTripper: it sends the bearer token
// (when set), records every exchange and keeps what the client read of its
// standalone event stream (the GET).
type wireLog struct {
	t     *testing.T
	token string
	base  http.RoundTripper

	mu     sync.Mutex
	ex     []exchange
	stream bytes.Buffer  // the bodies of the GET streams, as read
	grew   chan struct{} // signalled when stream grows
}

// newWireLog returns a wireLog that sends token (none when "") through a
// fresh transport, closed with the test.
func newWireLog(t *testing.T, token string) *wireLog {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	return &wireLog{t: t, token: token, base: tr, grew: make(chan struct{}, 1)}
}

func (l *wireLog) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if l.token != "" {
		r.Header.Set("Authorization", "Bearer "+l.token)
	}
	e := exchange{Method: r.Method, Version: r.Header.Get(versionHeader)}
	if r.Method == http.MethodPost {
		e.RPCMethod, e.Call = rpcMethod(readBody(l.t, &r.Body))
	}
	resp, err := l.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	e.Status = resp.StatusCode
	e.ContentType = resp.Header.Get("Content-Type")
	e.Session = resp.Header.Get(sessionHeader)
	l.mu.Lock()
	l.ex = append(l.ex, e)
	l.mu.Unlock()
	if r.Method == http.MethodGet {
		resp.Body = &teeBody{ReadCloser: resp.Body, l: l}
	}
	return resp, nil
}

// teeBody copies what the client reads of a GET stream into its wireLog.
type teeBody struct {
	io.ReadCloser
	l *wireLog
}

func (b *teeBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.l.mu.Lock()
		b.l.stream.Write(p[:n])
		b.l.mu.Unlock()
		select {
		case b.l.grew <- struct{}{}:
		default:
		}
	}
	return n, err
}

// exchanges returns the exchanges recorded so far.
func (l *wireLog) exchanges() []exchange {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.ex)
}

// waitStream waits until the client has read s on its standalone stream.
func (l *wireLog) waitStream(ctx context.Context, s string) {
	l.t.Helper()
	for {
		l.mu.Lock()
		found := strings.Contains(l.stream.String(), s)
		l.mu.Unlock()
		if found {
			return
		}
		select {
		case <-l.grew:
		case <-ctx.Done():
			l.t.Fatalf("the SDK client did not read %q on its standalone stream: %v", s, ctx.Err())
		}
	}
}

// checkTransport checks the server's side of every exchange against the
// Streamable HTTP transport (revisions 2025-03-26 on, "Sending Messages to
// the Server", "Listening for Messages from the Server", "Session
// Management", "Protocol Version Header"), which the SDK's client only
// partly enforces: it ignores the status of a notification and any 4xx to
// its GET, and falls back to the handshake whatever its server/discover
// gets. served are the revisions the server speaks.
func checkTransport(t *testing.T, ex []exchange, served []string) {
	t.Helper()
	require.NotEmpty(t, ex)
	for i, e := range ex {
		what := fmt.Sprintf("%d: %s %s", i, e.Method, e.RPCMethod)
		switch {
		case e.Version != "" && !slices.Contains(served, e.Version):
			// "If the server receives a request with an invalid or
			// unsupported MCP-Protocol-Version, it MUST respond with 400
			// Bad Request."
			assert.Equal(t, http.StatusBadRequest, e.Status, "%s: %s %s", what, versionHeader, e.Version)
		case e.Method == http.MethodPost && e.Call:
			// "the server MUST either return Content-Type:
			// text/event-stream ... or Content-Type: application/json".
			assert.Equal(t, http.StatusOK, e.Status, what)
			assert.Contains(t, []string{"application/json", "text/event-stream"}, mediaType(e.ContentType), what)
		case e.Method == http.MethodPost:
			// "If the server accepts the input, the server MUST return
			// HTTP status code 202 Accepted with no body."
			assert.Equal(t, http.StatusAccepted, e.Status, "%s: a notification", what)
		case e.Method == http.MethodGet:
			// "The server MUST either return Content-Type:
			// text/event-stream in response to this HTTP GET, or else
			// return HTTP 405 Method Not Allowed".
			if e.Status != http.StatusMethodNotAllowed {
				assert.Equal(t, http.StatusOK, e.Status, what)
				assert.Equal(t, "text/event-stream", mediaType(e.ContentType), what)
			}
		case e.Method == http.MethodDelete:
			// "The server MAY respond to this request with HTTP 405
			// Method Not Allowed".
			if e.Status != http.StatusMethodNotAllowed {
				assert.True(t, e.Status >= 200 && e.Status < 300, "%s: status %d", what, e.Status)
			}
		default:
			t.Errorf("%s: an unexpected request", what)
		}
		if e.RPCMethod == "initialize" && e.Session != "" {
			// "The session ID ... MUST only contain visible ASCII
			// characters (ranging from 0x21 to 0x7E)."
			for _, c := range []byte(e.Session) {
				assert.True(t, c >= 0x21 && c <= 0x7E, "session id %q has byte %#x", e.Session, c)
			}
		}
	}
}

// checkDiscoverFallback checks that the SDK's default client first asked
// server/discover, naming the 2026-07-28 revision, which a server that
// does not speak it refuses with 400, then made the handshake.
func checkDiscoverFallback(t *testing.T, ex []exchange) {
	t.Helper()
	require.GreaterOrEqual(t, len(ex), 2)
	assert.Equal(t, "server/discover", ex[0].RPCMethod)
	assert.Greater(t, ex[0].Version, newestHandshakeRevision, "the revision server/discover names")
	assert.Equal(t, "initialize", ex[1].RPCMethod)
}

// connectSDK connects the SDK's client to the MCP endpoint url through l,
// offering revision rev (the SDK's default when ""), and closes the session
// with the test.
func connectSDK(t *testing.T, url string, l *wireLog, rev string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "conformance", Version: "1"}, nil)
	tr := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: l}, MaxRetries: -1}
	var opts *mcp.ClientSessionOptions
	if rev != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: rev}
	}
	cs, err := c.Connect(testContext(t), tr, opts)
	require.NoError(t, err, "connecting the SDK client")
	t.Cleanup(func() { cs.Close() })
	return cs
}

// toolNames returns the names of tools.
func toolNames(tools []*mcp.Tool) []string {
	names := make([]string, len(tools))
	for i, tl := range tools {
		names[i] = tl.Name
	}
	return names
}

// text returns the text of a tool result's only content, failing the test
// unless it has exactly one text item.
func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	require.Len(t, res.Content, 1)
	tc, ok := res.Content[0].(*mcp.TextContent)
	require.True(t, ok, "content is %T, not text", res.Content[0])
	return tc.Text
}
