package mcp

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/httpc"
	"github.com/headroom-dev/headroom/loadtest/sse"
)

// Protocol revisions and header names.
const (
	// DefaultProtocolVersion is the MCP revision sent when Options names
	// none.
	DefaultProtocolVersion = "2025-06-18"
	// SessionHeader carries the session id initialize returns.
	SessionHeader = "Mcp-Session-Id"
	// VersionHeader carries the protocol revision on requests after
	// initialize (revisions from 2025-06-18 on), and on every request of
	// the stateless revision.
	VersionHeader = "MCP-Protocol-Version"
	// StatelessVersion is the first revision without a handshake
	// (SEP-2575): server/discover replaces initialize, every request
	// carries its revision, capabilities and client in params._meta (and
	// the revision, method and name in headers), and the notification
	// stream is a subscriptions/listen request (see ListenConfig).
	// Options.ProtocolVersion set to it, or later, speaks that era.
	StatelessVersion = "2026-07-28"
	// MethodHeader mirrors a stateless request's method.
	MethodHeader = "Mcp-Method"
	// NameHeader mirrors a stateless request's principal name, such as
	// the tool of tools/call.
	NameHeader = "Mcp-Name"
)

// Keys of the per-request metadata of the stateless revision.
const (
	metaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	metaClientInfo         = "io.modelcontextprotocol/clientInfo"
)

// Kinds to record a modeled MCP user's requests under (loadtest.User.Do):
// the method's name, and one for a connect.
const (
	// KindInitialize is a user's connect: initialize and
	// notifications/initialized, or server/discover in the stateless era.
	KindInitialize = "initialize"
	KindListTools  = "tools/list"
	KindCallTool   = "tools/call"
)

// Stateless reports whether the revision v is of the stateless era
// (StatelessVersion or later).
func Stateless(v string) bool { return v >= StatelessVersion }

// Options configure one Client (one modeled user).
type Options struct {
	// URL is the MCP endpoint, such as http://127.0.0.1:8080/mcp.
	URL string
	// Token is the user's bearer token, sent as Authorization: Bearer;
	// empty sends none.
	Token string
	// ProtocolVersion is the revision offered in initialize and sent in
	// the MCP-Protocol-Version header. Empty means DefaultProtocolVersion;
	// StatelessVersion speaks the stateless era (no handshake).
	ProtocolVersion string
	// ClientName and ClientVersion are the clientInfo of initialize.
	// Empty means "headroom" and "0".
	ClientName, ClientVersion string
	// Header holds extra headers for every request and the notification
	// stream, such as httpc.ForwardedFor(i).
	Header []httpc.Header
	// SkipInitialized leaves out the notifications/initialized message
	// that Initialize otherwise sends after a successful initialize.
	SkipInitialized bool
	// Timeout, when positive, replaces the httpc client's per-request
	// timeout for this client's requests.
	Timeout time.Duration
}

// Client is one MCP session. Its methods are safe for concurrent use; a
// modeled user normally calls them from one goroutine.
type Client struct {
	hc   *httpc.Client
	opts Options
	req  *httpc.Request

	nextID  atomic.Int64
	mu      sync.Mutex
	session string
	version string // negotiated revision
	server  json.RawMessage
	// meta is the encoded "_meta" member of every stateless request's
	// params (revision, capabilities, client), or nil.
	meta []byte
}

// New returns a Client that sends through hc. It fails when the URL is not
// an absolute http(s) URL or a header is invalid.
func New(hc *httpc.Client, opts Options) (*Client, error) {
	if hc == nil {
		return nil, errors.New("mcp: nil *httpc.Client; create one with httpc.New and share it between users")
	}
	if opts.ProtocolVersion == "" {
		opts.ProtocolVersion = DefaultProtocolVersion
	}
	if opts.ClientName == "" {
		opts.ClientName = "headroom"
	}
	if opts.ClientVersion == "" {
		opts.ClientVersion = "0"
	}
	hdr := []httpc.Header{
		{Name: "Content-Type", Value: "application/json"},
		{Name: "Accept", Value: "application/json, text/event-stream"},
	}
	if opts.Token != "" {
		hdr = append(hdr, httpc.Header{Name: "Authorization", Value: "Bearer " + opts.Token})
	}
	hdr = append(hdr, opts.Header...)
	req, err := hc.Prepare("POST", opts.URL, hdr, nil)
	if err != nil {
		return nil, fmt.Errorf("mcp: %w", err)
	}
	c := &Client{hc: hc, opts: opts, req: req, version: opts.ProtocolVersion}
	if Stateless(opts.ProtocolVersion) {
		c.meta = requestMeta(opts)
	}
	return c, nil
}

// requestMeta returns the "_meta" member that every stateless request's
// params carry: `"_meta":{…}`.
func requestMeta(opts Options) []byte {
	m, _ := json.Marshal(map[string]any{
		metaProtocolVersion:    opts.ProtocolVersion,
		metaClientCapabilities: map[string]any{},
		metaClientInfo:         map[string]string{"name": opts.ClientName, "version": opts.ClientVersion},
	})
	return append([]byte(`"_meta":`), m...)
}

// withMeta returns the encoded params object p with the member meta
// added first; p "null" or empty is an object of meta alone.
func withMeta(p, meta []byte) []byte {
	p = bytes.TrimSpace(p)
	out := make([]byte, 0, len(p)+len(meta)+3)
	out = append(out, '{')
	out = append(out, meta...)
	if len(p) < 2 || p[0] != '{' || string(p) == "null" {
		return append(out, '}')
	}
	if rest := bytes.TrimSpace(p[1:]); len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, p[1:]...)
}

// SessionID returns the session id from initialize, or "".
func (c *Client) SessionID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.session
}

// ProtocolVersion returns the revision in use: the one the server answered
// in initialize, or Options.ProtocolVersion before that.
func (c *Client) ProtocolVersion() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.version
}

// ServerInfo returns the initialize result as the server sent it, or nil.
func (c *Client) ServerInfo() json.RawMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.server
}

// Initialize starts a session: initialize with the protocol revision and
// client info, keeping the Mcp-Session-Id of the answer, then (unless
// Options.SkipInitialized) the notifications/initialized message. The
// Response covers both; a failed notification is its outcome.
//
// In the stateless era there is no session: Initialize sends
// server/discover instead, and a server that does not list the revision
// among its supportedVersions is a ProtocolError naming them.
func (c *Client) Initialize(ctx context.Context) loadtest.Response {
	c.mu.Lock()
	c.session = ""
	c.version = c.opts.ProtocolVersion
	c.mu.Unlock()
	if c.meta != nil {
		return c.discover(ctx)
	}
	params := map[string]any{
		"protocolVersion": c.opts.ProtocolVersion,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]string{"name": c.opts.ClientName, "version": c.opts.ClientVersion},
	}
	var result struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	var raw json.RawMessage
	resp := c.call(ctx, "initialize", params, &raw, true)
	if resp.Outcome != loadtest.OK {
		return resp
	}
	if err := json.Unmarshal(raw, &result); err != nil {
		return protocolError("mcp: initialize result is not an object", raw, resp.Bytes)
	}
	c.mu.Lock()
	c.server = raw
	if result.ProtocolVersion != "" {
		c.version = result.ProtocolVersion
	}
	c.mu.Unlock()
	if c.opts.SkipInitialized {
		return resp
	}
	n := c.Notify(ctx, "notifications/initialized", nil)
	n.Bytes += resp.Bytes
	return n
}

// discover is the stateless era's Initialize: server/discover, whose
// answer must list the client's revision.
func (c *Client) discover(ctx context.Context) loadtest.Response {
	var raw json.RawMessage
	resp := c.call(ctx, "server/discover", nil, &raw, false)
	if resp.Outcome != loadtest.OK {
		return resp
	}
	var result struct {
		SupportedVersions []string `json:"supportedVersions"`
	}
	if err := json.Unmarshal(raw, &result); err != nil {
		return protocolError("mcp: server/discover result is not an object", raw, resp.Bytes)
	}
	if !slices.Contains(result.SupportedVersions, c.opts.ProtocolVersion) {
		return loadtest.Response{Outcome: loadtest.ProtocolError, Bytes: resp.Bytes, Err: fmt.Errorf(
			"mcp: the server does not speak revision %s (server/discover lists %q); set ProtocolVersion to one of them",
			c.opts.ProtocolVersion, result.SupportedVersions)}
	}
	c.mu.Lock()
	c.server = raw
	c.mu.Unlock()
	return resp
}

// Notify sends a JSON-RPC notification (no id, no answer expected); any
// 2xx is OK.
func (c *Client) Notify(ctx context.Context, method string, params any) loadtest.Response {
	msg := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		msg["params"] = params
	}
	body, err := json.Marshal(msg)
	if err != nil {
		return loadtest.Response{Outcome: loadtest.ProtocolError, Err: fmt.Errorf("mcp: encoding %s params: %w", method, err)}
	}
	call := c.newCall(body, false, method, "")
	return c.hc.Exchange(ctx, c.req, call)
}

// Tool is one tool of a tools/list answer.
type Tool struct {
	// Name is the tool's name, to pass to CallTool.
	Name string `json:"name"`
	// Description is the tool's description.
	Description string `json:"description,omitempty"`
	// InputSchema is the JSON schema of the tool's arguments.
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
}

// ListTools calls tools/list and returns the tools of the first page.
func (c *Client) ListTools(ctx context.Context) ([]Tool, loadtest.Response) {
	var result struct {
		Tools []Tool `json:"tools"`
	}
	resp := c.Call(ctx, "tools/list", map[string]any{}, &result)
	return result.Tools, resp
}

// Content is one item of a tool result's content.
type Content struct {
	// Type is the content type, such as "text".
	Type string `json:"type"`
	// Text is the text of a text item.
	Text string `json:"text,omitempty"`
}

// ToolResult is the result of tools/call.
type ToolResult struct {
	// Content is what the tool returned.
	Content []Content `json:"content"`
	// IsError marks a tool error (the call reached the tool, which failed).
	IsError bool `json:"isError"`
	// StructuredContent is the tool's structured result, if any.
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
}

// ToolError is the error of a tools/call result with isError true.
type ToolError struct {
	// Tool is the tool's name.
	Tool string
	// Text is the first text content of the result, if any.
	Text string
}

// Error returns "mcp: tool <name> failed: <text>".
func (e *ToolError) Error() string { return "mcp: tool " + e.Tool + " failed: " + e.Text }

// CallTool calls tools/call for the tool name with arguments (anything that
// encodes to a JSON object, or nil). A result with isError true is an
// AppError with a *ToolError; the result is returned either way.
func (c *Client) CallTool(ctx context.Context, name string, arguments any) (*ToolResult, loadtest.Response) {
	params := map[string]any{"name": name}
	if arguments != nil {
		params["arguments"] = arguments
	} else {
		params["arguments"] = map[string]any{}
	}
	var res ToolResult
	resp := c.Call(ctx, "tools/call", params, &res)
	if resp.Outcome != loadtest.OK {
		return nil, resp
	}
	if res.IsError {
		text := ""
		for _, ct := range res.Content {
			if ct.Type == "text" {
				text = ct.Text
				break
			}
		}
		resp.Outcome = loadtest.AppError
		resp.Err = &ToolError{Tool: name, Text: text}
	}
	return &res, resp
}

// RPCError is a JSON-RPC error object of an answer.
type RPCError struct {
	// Code is the JSON-RPC error code, such as -32601.
	Code int `json:"code"`
	// Message is the error's message.
	Message string `json:"message"`
	// Data is the error's data, if any.
	Data json.RawMessage `json:"data,omitempty"`
}

// Error returns "mcp: JSON-RPC error <code>: <message>".
func (e *RPCError) Error() string {
	return "mcp: JSON-RPC error " + strconv.Itoa(e.Code) + ": " + e.Message
}

// Call sends the request method with params and decodes its result into
// result (a pointer, or nil to skip decoding).
func (c *Client) Call(ctx context.Context, method string, params any, result any) loadtest.Response {
	return c.call(ctx, method, params, result, false)
}

// newCall prepares the exchange of body; method and name fill the
// stateless era's mirror headers.
func (c *Client) newCall(body []byte, initialize bool, method, name string) *httpc.Call {
	call := &httpc.Call{
		Body:     body,
		KeepBody: true,
		Capture:  []string{SessionHeader, "Content-Type"},
		Timeout:  c.opts.Timeout,
	}
	if !initialize {
		c.mu.Lock()
		if c.session != "" {
			call.Header = append(call.Header, httpc.Header{Name: SessionHeader, Value: c.session})
		}
		if c.version >= "2025-06-18" {
			call.Header = append(call.Header, httpc.Header{Name: VersionHeader, Value: c.version})
		}
		c.mu.Unlock()
	}
	if c.meta != nil {
		call.Header = append(call.Header, httpc.Header{Name: MethodHeader, Value: method})
		if name != "" {
			call.Header = append(call.Header, httpc.Header{Name: NameHeader, Value: headerValue(name)})
		}
	}
	return call
}

// principalName returns the name a stateless request mirrors in
// NameHeader: the tool of tools/call, the prompt of prompts/get, the URI
// of resources/read; "" for other methods.
func principalName(method string, params any) string {
	var key string
	switch method {
	case "tools/call", "prompts/get":
		key = "name"
	case "resources/read":
		key = "uri"
	default:
		return ""
	}
	switch p := params.(type) {
	case map[string]any:
		s, _ := p[key].(string)
		return s
	case map[string]string:
		return p[key]
	}
	return ""
}

// headerValue returns s as a header value: as it is when it is plain
// printable ASCII, else in the =?base64?…?= form of SEP-2243.
func headerValue(s string) string {
	plain := !strings.HasPrefix(s, "=?base64?") && !strings.HasPrefix(s, " ") && !strings.HasSuffix(s, " ") &&
		!strings.HasPrefix(s, "\t") && !strings.HasSuffix(s, "\t")
	for i := 0; plain && i < len(s); i++ {
		plain = s[i] >= 0x20 && s[i] <= 0x7e
	}
	if plain {
		return s
	}
	return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?="
}

func (c *Client) call(ctx context.Context, method string, params any, result any, initialize bool) loadtest.Response {
	id := c.nextID.Add(1)
	var p json.RawMessage
	if params != nil || c.meta != nil {
		var err error
		if p, err = json.Marshal(params); err != nil {
			return loadtest.Response{Outcome: loadtest.ProtocolError, Err: fmt.Errorf("mcp: encoding %s params: %w", method, err)}
		}
		if c.meta != nil {
			p = withMeta(p, c.meta)
		}
	}
	// The params are encoded once; the envelope is appended around them
	// (json.Marshal of a RawMessage would compact them again).
	m, _ := json.Marshal(method) // a string always encodes
	body := make([]byte, 0, 48+len(m)+len(p))
	body = append(body, `{"jsonrpc":"2.0","id":`...)
	body = strconv.AppendInt(body, id, 10)
	body = append(body, `,"method":`...)
	body = append(body, m...)
	if len(p) > 0 {
		body = append(body, `,"params":`...)
		body = append(body, p...)
	}
	body = append(body, '}')
	var name string
	if c.meta != nil {
		name = principalName(method, params)
	}
	call := c.newCall(body, initialize, method, name)
	resp := c.hc.Exchange(ctx, c.req, call)
	if resp.Outcome != loadtest.OK {
		if r, ok := rpcErrorAnswer(call, id, resp); ok {
			return r
		}
		if call.Status >= 400 && len(call.RespBody) > 0 {
			resp.Err = fmt.Errorf("%w: %s", resp.Err, excerpt(call.RespBody))
		}
		return resp
	}
	if initialize {
		c.mu.Lock()
		c.session = call.Captured[0]
		c.mu.Unlock()
	}
	msg := call.RespBody
	if strings.HasPrefix(strings.ToLower(call.Captured[1]), "text/event-stream") {
		var perr error
		msg, perr = messageFromStream(call.RespBody, id)
		if perr != nil {
			return loadtest.Response{Outcome: loadtest.ProtocolError, Bytes: resp.Bytes, Err: perr}
		}
	}
	return decodeAnswer(msg, id, result, resp.Bytes)
}

// rpcErrorAnswer reads a 4xx answer whose body is a JSON-RPC error for
// the request id as that error (an AppError, as with a 200): servers of
// the stateless revision answer a request they refuse, such as a call of
// an unknown tool, with 400 and the error.
func rpcErrorAnswer(call *httpc.Call, id int64, resp loadtest.Response) (loadtest.Response, bool) {
	if call.Status < 400 || call.Status >= 500 || !strings.HasPrefix(strings.ToLower(call.Captured[1]), "application/json") {
		return resp, false
	}
	var a answer
	if json.Unmarshal(call.RespBody, &a) != nil || a.Error == nil || !bytes.Equal(bytes.TrimSpace(a.ID), strconv.AppendInt(nil, id, 10)) {
		return resp, false
	}
	return loadtest.Response{Outcome: loadtest.AppError, Bytes: resp.Bytes, Err: fmt.Errorf("HTTP %d: %w", call.Status, a.Error)}, true
}

// answer is a JSON-RPC response object.
type answer struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *RPCError       `json:"error"`
}

func decodeAnswer(msg []byte, id int64, result any, n int64) loadtest.Response {
	var a answer
	if err := json.Unmarshal(msg, &a); err != nil {
		return protocolError("mcp: answer is not a JSON-RPC object", msg, n)
	}
	if a.JSONRPC != "2.0" {
		return protocolError(`mcp: answer lacks "jsonrpc":"2.0"`, msg, n)
	}
	if !bytes.Equal(bytes.TrimSpace(a.ID), strconv.AppendInt(nil, id, 10)) {
		if a.Error != nil && (len(a.ID) == 0 || string(a.ID) == "null") {
			// A parse or invalid-request error cannot name the id.
			return loadtest.Response{Outcome: loadtest.AppError, Bytes: n, Err: a.Error}
		}
		return protocolError("mcp: answer id "+string(a.ID)+" does not match request id "+strconv.FormatInt(id, 10), msg, n)
	}
	if a.Error != nil {
		return loadtest.Response{Outcome: loadtest.AppError, Bytes: n, Err: a.Error}
	}
	if len(a.Result) == 0 || string(a.Result) == "null" {
		return protocolError("mcp: answer has neither result nor error", msg, n)
	}
	if result != nil {
		if raw, ok := result.(*json.RawMessage); ok {
			*raw = append((*raw)[:0], a.Result...)
		} else if err := json.Unmarshal(a.Result, result); err != nil {
			return protocolError("mcp: result does not decode ("+err.Error()+")", a.Result, n)
		}
	}
	return loadtest.Response{Outcome: loadtest.OK, Bytes: n}
}

func protocolError(msg string, sample []byte, n int64) loadtest.Response {
	return loadtest.Response{Outcome: loadtest.ProtocolError, Bytes: n, Err: httpc.NewProtocolError(msg, sample)}
}

func excerpt(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}

// StreamHeaders returns the headers that open this client's notification
// stream with an sse.Group: Authorization, Mcp-Session-Id (after
// initialize; none in the stateless era), MCP-Protocol-Version and
// Options.Header. Accept is added by the stream.
func (c *Client) StreamHeaders() []httpc.Header {
	var h []httpc.Header
	if c.opts.Token != "" {
		h = append(h, httpc.Header{Name: "Authorization", Value: "Bearer " + c.opts.Token})
	}
	c.mu.Lock()
	if c.session != "" {
		h = append(h, httpc.Header{Name: SessionHeader, Value: c.session})
	}
	if c.version >= "2025-06-18" {
		h = append(h, httpc.Header{Name: VersionHeader, Value: c.version})
	}
	c.mu.Unlock()
	return append(h, c.opts.Header...)
}

// OpenNotifications opens this user's notification stream in g (made from
// NotificationConfig, or ListenConfig in the stateless era), held until
// ctx ends or the stream is closed.
func (c *Client) OpenNotifications(ctx context.Context, g *sse.Group) *sse.Stream {
	return g.Open(ctx, c.StreamHeaders()...)
}

// NotificationConfig returns an sse.Config for the notification streams of
// clients on the MCP endpoint url: the endpoint as stream URL, hc's dialer
// (TLS roots, source addresses), the relay's 15-second keepalive as the
// health interval. Adjust fields before sse.NewGroup.
func NotificationConfig(hc *httpc.Client, url string, sink loadtest.Sink) sse.Config {
	return sse.Config{
		URL:               url,
		Dialer:            hc.Dialer(),
		KeepaliveInterval: 15 * time.Second,
		Sink:              sink,
	}
}

// ListenConfig returns an sse.Config for the notification streams of the
// stateless era on the MCP endpoint url: each a subscriptions/listen
// request at revision version (POST, asking for tool-list changes), held
// as the server streams its answer; otherwise as NotificationConfig. The
// JSON-RPC messages of the stream — the acknowledgment the server sends
// first, the result that ends a subscription — are protocol, not
// deliveries: they do not count for Stream.Expect (Config.Match).
func ListenConfig(hc *httpc.Client, url, version string, sink loadtest.Sink) sse.Config {
	params := withMeta([]byte(`{"notifications":{"toolsListChanged":true}}`),
		requestMeta(Options{ProtocolVersion: version, ClientName: "headroom", ClientVersion: "0"}))
	body := append([]byte(`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":`), params...)
	cfg := NotificationConfig(hc, url, sink)
	cfg.Method, cfg.Body, cfg.Accept = "POST", append(body, '}'), "application/json, text/event-stream"
	cfg.Header = []httpc.Header{{Name: "Content-Type", Value: "application/json"}, {Name: MethodHeader, Value: "subscriptions/listen"}}
	cfg.Match = func(ev sse.Event) bool { return !bytes.Contains(ev.Data, []byte(`"jsonrpc"`)) }
	return cfg
}

// messageFromStream finds the JSON-RPC answer with id in an event-stream
// body: the data of the first event whose JSON has that id (requests and
// notifications the server sends first are skipped, and so are events
// without data, such as the priming event of a resumable stream).
func messageFromStream(body []byte, id int64) ([]byte, error) {
	h := &streamAnswer{id: strconv.AppendInt(nil, id, 10)}
	p := sse.Parser{Handler: h}
	p.Feed(body)
	p.Feed([]byte("\n\n")) // a final event without its blank line
	if h.err != nil {
		return nil, h.err
	}
	if h.msg == nil {
		return nil, httpc.NewProtocolError("mcp: event-stream answer holds no response with id "+string(h.id), body)
	}
	return h.msg, nil
}

type streamAnswer struct {
	id  []byte
	msg []byte
	err error
}

func (h *streamAnswer) Event(ev sse.Event) {
	if h.msg != nil || len(ev.Data) == 0 {
		// An event with empty data carries no message: from 2025-11-25 a
		// server primes a resumable stream with one (an id only).
		return
	}
	var a struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if err := json.Unmarshal(ev.Data, &a); err != nil {
		h.err = httpc.NewProtocolError("mcp: event data is not JSON", ev.Data)
		return
	}
	if a.Method != "" {
		return // a server request or notification
	}
	// The first answer is the one: decodeAnswer reports an id mismatch.
	h.msg = append([]byte(nil), ev.Data...)
}
func (h *streamAnswer) Comment([]byte)                     {}
func (h *streamAnswer) Retry(time.Duration)                {}
func (h *streamAnswer) Malformed(err *httpc.ProtocolError) { h.err = err }

// URL returns the MCP endpoint the client posts to.
func (c *Client) URL() string { return c.opts.URL }
