package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// The stateless era of MCP (revision 2026-07-28, SEP-2575): no handshake
// and no session. A client learns the relay's revisions with
// server/discover, and every request names its revision in
// params._meta (and the MCP-Protocol-Version header); the notification
// stream is a subscriptions/listen request whose answer is held open.

// StatelessVersion is the revision of the stateless era the relay speaks.
const StatelessVersion = "2026-07-28"

// Headers in which a stateless-era request mirrors its body (SEP-2243).
const (
	// MethodHeader mirrors the JSON-RPC method.
	MethodHeader = "Mcp-Method"
	// NameHeader mirrors params.name of a tools/call.
	NameHeader = "Mcp-Name"
)

// CodeHeaderMismatch is the JSON-RPC error of a stateless-era request
// whose MCP-Protocol-Version, Mcp-Method or Mcp-Name header disagrees with
// its body; it is answered with HTTP 400, as the MCP Go SDK's server does.
const CodeHeaderMismatch = -32020

// Keys of params._meta and result._meta in the stateless era.
const (
	metaProtocolVersion = "io.modelcontextprotocol/protocolVersion"
	metaServerInfo      = "io.modelcontextprotocol/serverInfo"
	metaSubscriptionID  = "io.modelcontextprotocol/subscriptionId"
)

// serverInfoMember is the "_meta" member every stateless-era result
// carries: the relay's identity, which servers SHOULD send on every
// response of the era. It is encoded once and spliced into results.
var serverInfoMember = []byte(`"_meta":{"` + metaServerInfo + `":{"name":"headroom-relay","version":"` + Version + `"}}`)

// discoverResult is the answer to server/discover: every revision the
// relay speaks, newest first, and what initialize would announce. ttlMs 0
// asks clients not to cache it; cacheScope is required on the wire (the
// SDK's server sends "public", the protocol's default).
var discoverResult = json.RawMessage(`{"supportedVersions":["` + strings.Join(discoverVersions, `","`) +
	`"],"capabilities":{"tools":{"listChanged":false}},"ttlMs":0,"cacheScope":"public","resultType":"complete",` +
	string(serverInfoMember) + `}`)

// discoverVersions are the revisions server/discover lists, newest first.
var discoverVersions = []string{StatelessVersion, "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// statelessRequest reports whether req is of the stateless era — its
// MCP-Protocol-Version header or its params._meta names StatelessVersion
// — and, if so, checks that it names its revision in params._meta and that
// the headers present mirror the body. Requests of the handshake era pay
// for one substring search of their params.
func statelessRequest(h http.Header, req rpcRequest) (bool, *rpcError) {
	hv := h.Get(VersionHeader)
	if hv != StatelessVersion && !bytes.Contains(req.Params, []byte(metaProtocolVersion)) {
		return false, nil
	}
	// Fields of the wrong type are left empty: Unmarshal goes on past them.
	var pp struct {
		Name json.RawMessage `json:"name"`
		Meta struct {
			Version json.RawMessage `json:"io.modelcontextprotocol/protocolVersion"`
		} `json:"_meta"`
	}
	_ = json.Unmarshal(req.Params, &pp)
	var mv string
	_ = json.Unmarshal(pp.Meta.Version, &mv)
	if hv != StatelessVersion && mv != StatelessVersion {
		return false, nil
	}
	if mv == "" {
		return true, newRPCError(CodeInvalidParams,
			"invalid params: params._meta[%q] is missing or not a string: every request of revision %s names its revision there",
			metaProtocolVersion, StatelessVersion)
	}
	if hv != "" && hv != mv {
		return true, newRPCError(CodeHeaderMismatch, "header mismatch: %s header %q does not match params._meta[%q] %q",
			VersionHeader, hv, metaProtocolVersion, mv)
	}
	if m := h.Get(MethodHeader); m != "" && m != req.Method {
		return true, newRPCError(CodeHeaderMismatch, "header mismatch: %s header %q does not match the method %q",
			MethodHeader, m, req.Method)
	}
	if n := h.Get(NameHeader); n != "" && req.Method == "tools/call" {
		var name string
		if json.Unmarshal(pp.Name, &name) != nil {
			name = string(pp.Name)
		}
		if n != name {
			return true, newRPCError(CodeHeaderMismatch, "header mismatch: %s header %q does not match params.name %q",
				NameHeader, n, name)
		}
	}
	return true, nil
}

// appendResult appends result, a JSON object, with the serverInfo "_meta"
// member added when stateless. The member is spliced in after the opening
// brace, so a large tools/call result is copied, not decoded; only a
// result that mentions "_meta" is decoded, to merge the member into its
// own _meta. Anything but an object is appended as it is.
func appendResult(b []byte, result json.RawMessage, stateless bool) []byte {
	r := bytes.TrimLeft(result, " \t\r\n")
	if !stateless || len(r) == 0 || r[0] != '{' {
		return append(b, result...)
	}
	if bytes.Contains(r, []byte(`"_meta"`)) {
		if merged, ok := mergeServerInfo(r); ok {
			return append(b, merged...)
		}
	}
	b = append(b, '{')
	b = append(b, serverInfoMember...)
	rest := bytes.TrimLeft(r[1:], " \t\r\n")
	if len(rest) > 0 && rest[0] != '}' {
		b = append(b, ',')
	}
	return append(b, rest...)
}

// mergeServerInfo returns the object result with serverInfo added to its
// top-level _meta (kept when the result already names a serverInfo). ok is
// false when result has no top-level _meta object (the "_meta" found was
// nested, or a string): then the member can be spliced in.
func mergeServerInfo(result []byte) (merged []byte, ok bool) {
	var top map[string]json.RawMessage
	if json.Unmarshal(result, &top) != nil {
		return nil, false
	}
	var meta map[string]json.RawMessage
	if raw, found := top["_meta"]; !found || json.Unmarshal(raw, &meta) != nil || meta == nil {
		return nil, false
	}
	if _, found := meta[metaServerInfo]; !found {
		meta[metaServerInfo] = json.RawMessage(`{"name":"headroom-relay","version":"` + Version + `"}`)
	}
	var err error
	if top["_meta"], err = json.Marshal(meta); err != nil {
		return nil, false
	}
	if merged, err = json.Marshal(top); err != nil {
		return nil, false
	}
	return merged, true
}

// listen serves subscriptions/listen: the user's event stream, as GET /mcp
// serves it, held as the answer to this request. The relay announces no
// list-changed capability, so the acknowledgment, written first, honors
// none of the notifications asked for; the stream's "event: call" frames
// are the relay's own extension (clients of the protocol skip events not
// named "message"). Only the request id is kept for the stream's life, for
// the result that ends the subscription on drain.
func (s *Server) listen(w http.ResponseWriter, r *http.Request, p principal, req rpcRequest) {
	if !acceptsEventStream(r) {
		writeRPCError(w, http.StatusNotAcceptable, req.ID, newRPCError(CodeInvalidRequest,
			"subscriptions/listen is answered with an event stream: send Accept: application/json, text/event-stream"))
		return
	}
	var lp struct {
		Notifications json.RawMessage `json:"notifications"`
	}
	if rerr := decodeParams(req.Params, &lp, false); rerr != nil {
		writeRPCError(w, http.StatusOK, req.ID, rerr)
		return
	}
	if n := bytes.TrimSpace(lp.Notifications); len(n) == 0 || n[0] != '{' {
		writeRPCError(w, http.StatusOK, req.ID, newRPCError(CodeInvalidParams,
			"invalid params: notifications must be an object naming the notifications to subscribe to, e.g. {}"))
		return
	}
	// A copy, so that the stream holds the id's bytes and not the body's.
	s.serveStream(w, r, p, userStream, 0, string(req.ID))
}

// listenAckFrame returns the first bytes of a subscriptions/listen stream:
// the acknowledgment (an SSE message event), then the ": connected"
// comment every stream starts with.
func listenAckFrame(id string) *frame {
	b := make([]byte, 0, 200+len(id))
	b = append(b, `event: message`+"\n"+`data: {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{},"_meta":{"`+metaSubscriptionID+`":`...)
	b = append(b, id...)
	b = append(b, "}}}\n\n"...)
	b = append(b, connectedFrame.raw...)
	return &frame{raw: b, chunk: chunked(b)}
}

// listenFinalFrame returns what a subscriptions/listen stream is sent when
// it is closed with final (on drain): the JSON-RPC result that ends the
// subscription, so that the client's request completes, then final. It is
// built only then, for listen streams only.
func listenFinalFrame(id string, final *frame) *frame {
	b := make([]byte, 0, 120+2*len(id)+len(final.raw))
	b = append(b, `event: message`+"\n"+`data: {"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"result":{"_meta":{"`+metaSubscriptionID+`":`...)
	b = append(b, id...)
	b = append(b, "}}}\n\n"...)
	b = append(b, final.raw...)
	return &frame{raw: b, chunk: chunked(b)}
}

// methodNotFound answers a method the relay does not serve in the request's
// era, naming the ones it does.
func methodNotFound(method string, stateless bool) *rpcError {
	if stateless {
		return newRPCError(CodeMethodNotFound,
			"method %q not found at revision %s; the relay serves server/discover, tools/list, tools/call and subscriptions/listen (initialize and ping are gone from this revision)",
			method, StatelessVersion)
	}
	msg := fmt.Sprintf("method %q not found; the relay serves initialize, ping, server/discover, tools/list and tools/call", method)
	if method == "subscriptions/listen" {
		msg += fmt.Sprintf(" (subscriptions/listen is of revision %s: name it in params._meta[%q]; before it, GET /mcp is the stream)",
			StatelessVersion, metaProtocolVersion)
	}
	return newRPCError(CodeMethodNotFound, "%s", msg)
}
