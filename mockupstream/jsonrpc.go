package mockupstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
)

// The JSON-RPC 2.0 error codes the upstream answers.
const (
	// CodeParseError: the body is not valid JSON.
	CodeParseError = -32700
	// CodeInvalidRequest: valid JSON but not a JSON-RPC 2.0 request
	// object (wrong "jsonrpc", missing method, a batch, a bad id).
	CodeInvalidRequest = -32600
	// CodeMethodNotFound: a method the upstream does not serve.
	CodeMethodNotFound = -32601
	// CodeInvalidParams: params of the wrong shape, or an unknown tool.
	CodeInvalidParams = -32602
)

// ProtocolVersion is the MCP protocol version initialize answers when the
// client names none, or one the upstream does not serve.
const ProtocolVersion = "2025-06-18"

// supportedVersions are the MCP protocol versions the upstream speaks:
// initialize answers one of them as asked (a server must answer a version
// it does not support with another one it supports), and a request naming
// another one in versionHeader is refused.
var supportedVersions = []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"}

// versionHeader names the negotiated version on the requests after
// initialize (versions from 2025-06-18 on).
const versionHeader = "MCP-Protocol-Version"

// rpcRequest is a parsed JSON-RPC request.
type rpcRequest struct {
	id     json.RawMessage // nil for a notification
	method string
	params json.RawMessage // nil when absent
}

// rpcError is a JSON-RPC error to answer.
type rpcError struct {
	code int
	msg  string
}

var nullID = json.RawMessage("null")

// parseRPC parses body as one JSON-RPC 2.0 request. On failure it returns the
// error to answer and the id to answer it with (null when unknown).
func parseRPC(body []byte) (rpcRequest, json.RawMessage, *rpcError) {
	if !json.Valid(body) {
		return rpcRequest{}, nullID, &rpcError{CodeParseError, "parse error: the body is not valid JSON"}
	}
	body = bytes.TrimSpace(body)
	switch body[0] {
	case '{':
	case '[':
		return rpcRequest{}, nullID, &rpcError{CodeInvalidRequest, "invalid request: batches are not supported; send one request object per POST"}
	default:
		return rpcRequest{}, nullID, &rpcError{CodeInvalidRequest, "invalid request: the body must be a JSON-RPC request object"}
	}
	var raw struct {
		JSONRPC json.RawMessage `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  json.RawMessage `json:"method"`
		Params  json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return rpcRequest{}, nullID, &rpcError{CodeInvalidRequest, "invalid request: " + err.Error()}
	}
	id := raw.ID
	if id != nil {
		switch id[0] {
		case '"', 'n', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		default:
			return rpcRequest{}, nullID, &rpcError{CodeInvalidRequest, "invalid request: id must be a string, a number or null"}
		}
	}
	answerID := id
	if answerID == nil {
		answerID = nullID
	}
	if string(raw.JSONRPC) != `"2.0"` {
		return rpcRequest{}, answerID, &rpcError{CodeInvalidRequest, `invalid request: "jsonrpc" must be "2.0"`}
	}
	var method string
	if raw.Method == nil || json.Unmarshal(raw.Method, &method) != nil || method == "" {
		return rpcRequest{}, answerID, &rpcError{CodeInvalidRequest, `invalid request: "method" must be a non-empty string`}
	}
	params := raw.Params
	if params != nil && params[0] != '{' && params[0] != '[' && string(params) != "null" {
		return rpcRequest{}, answerID, &rpcError{CodeInvalidRequest, `invalid request: "params" must be an object or an array`}
	}
	if string(params) == "null" {
		params = nil
	}
	return rpcRequest{id: id, method: method, params: params}, answerID, nil
}

// callParams are the params of tools/call.
type callParams struct {
	Name      string
	Arguments json.RawMessage
}

// parseCallParams checks the params of tools/call against count tools.
func parseCallParams(params json.RawMessage, count int) (callParams, *rpcError) {
	if params == nil || params[0] != '{' {
		return callParams{}, &rpcError{CodeInvalidParams, `invalid params: tools/call needs params {"name": "<tool>", "arguments": {…}}`}
	}
	var p struct {
		Name      *string         `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return callParams{}, &rpcError{CodeInvalidParams, "invalid params: " + err.Error()}
	}
	if p.Name == nil || *p.Name == "" {
		return callParams{}, &rpcError{CodeInvalidParams, `invalid params: "name" must be a non-empty string`}
	}
	if a := p.Arguments; a != nil && a[0] != '{' && string(a) != "null" {
		return callParams{}, &rpcError{CodeInvalidParams, `invalid params: "arguments" must be an object`}
	}
	if toolIndex(*p.Name, count) == 0 {
		return callParams{}, &rpcError{CodeInvalidParams, fmt.Sprintf("invalid params: unknown tool %q; tools/list names the %d tools", *p.Name, count)}
	}
	return callParams{Name: *p.Name, Arguments: p.Arguments}, nil
}

// parseObjectParams checks that optional params are an object; it returns
// the object's protocolVersion when it has one.
func parseObjectParams(method string, params json.RawMessage) (string, *rpcError) {
	if params == nil {
		return "", nil
	}
	if params[0] != '{' {
		return "", &rpcError{CodeInvalidParams, fmt.Sprintf("invalid params: %s params must be an object", method)}
	}
	var p struct {
		ProtocolVersion *string `json:"protocolVersion"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return "", &rpcError{CodeInvalidParams, "invalid params: " + err.Error()}
	}
	if p.ProtocolVersion == nil {
		return "", nil
	}
	return *p.ProtocolVersion, nil
}

// errorReply returns the JSON-RPC error answer for e.
func errorReply(id json.RawMessage, e *rpcError) *reply {
	b := make([]byte, 0, 96+len(e.msg))
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"error":{"code":`...)
	b = strconv.AppendInt(b, int64(e.code), 10)
	b = append(b, `,"message":`...)
	b = appendJSONString(b, e.msg)
	b = append(b, "}}"...)
	return &reply{status: 200, contentType: "application/json", head: b}
}

// resultReply returns the JSON-RPC answer whose result is the JSON value
// result.
func resultReply(id json.RawMessage, result []byte) *reply {
	b := make([]byte, 0, 32+len(id)+len(result))
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"result":`...)
	b = append(b, result...)
	b = append(b, '}')
	return &reply{status: 200, contentType: "application/json", head: b}
}

// callTail ends the JSON of a successful tools/call answer after its text.
var callTail = []byte(`"}],"isError":false}}`)

// callReply returns the tools/call answer: text of size bytes of filler, or
// for a tool error the message, with isError set accordingly.
func callReply(id json.RawMessage, d Draw) *reply {
	b := make([]byte, 0, 96+len(id)+len(d.Message))
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"result":{"content":[{"type":"text","text":`...)
	if d.Outcome == ToolError {
		b = appendJSONString(b, "mockupstream: "+d.Message)
		b = append(b, `}],"isError":true}}`...)
		return &reply{status: 200, contentType: "application/json", head: b}
	}
	b = append(b, '"')
	return &reply{status: 200, contentType: "application/json", head: b, fill: d.Bytes, tail: callTail}
}

// initializeResult returns the result of initialize for the client's
// protocol version: that version when supported, else ProtocolVersion.
func initializeResult(version string) []byte {
	if !slices.Contains(supportedVersions, version) {
		version = ProtocolVersion
	}
	b := []byte(`{"protocolVersion":`)
	b = appendJSONString(b, version)
	return append(b, `,"capabilities":{"tools":{"listChanged":false}},"serverInfo":{"name":"mockupstream","version":"1.0.0"}}`...)
}

func appendJSONString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always marshals
	return append(b, q...)
}
