package server

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// JSON-RPC 2.0 error codes the relay answers with.
const (
	CodeParseError     = -32700 // the body is not JSON
	CodeInvalidRequest = -32600 // JSON, but not a JSON-RPC 2.0 request
	CodeMethodNotFound = -32601 // no such method
	CodeInvalidParams  = -32602 // params missing, of the wrong shape, or an unknown tool
	CodeInternalError  = -32603 // the relay could not do it (database, all upstreams down)
)

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("json-rpc %d: %s", e.Code, e.Message) }

func newRPCError(code int, format string, args ...any) *rpcError {
	return &rpcError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// rpcRequest is one JSON-RPC request or notification (ID nil).
type rpcRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

// isNotification reports whether the request has no id, so gets no answer.
func (r *rpcRequest) isNotification() bool { return r.ID == nil }

// rpcResponse is a JSON-RPC response: exactly one of Result and Error is set.
type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

var nullID = json.RawMessage("null")

// parseRequest decodes and checks one request. On failure the returned
// error carries the JSON-RPC code, and the id when one could be read.
func parseRequest(body []byte) (rpcRequest, json.RawMessage, *rpcError) {
	var req rpcRequest
	if !json.Valid(body) {
		return req, nullID, newRPCError(CodeParseError, "parse error: the body is not valid JSON")
	}
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	switch {
	case len(trimmed) > 0 && trimmed[0] == '[':
		return req, nullID, newRPCError(CodeInvalidRequest, "invalid request: batches are not supported; send one request object per POST")
	case len(trimmed) == 0 || trimmed[0] != '{':
		return req, nullID, newRPCError(CodeInvalidRequest, "invalid request: want a JSON object with jsonrpc, id, method and params")
	}
	// Decode the id on its own first, so an error about another field can
	// still answer the right id.
	var idOnly struct {
		ID json.RawMessage `json:"id"`
	}
	_ = json.Unmarshal(body, &idOnly)
	id := nullID
	if validID(idOnly.ID) {
		id = idOnly.ID
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return req, id, newRPCError(CodeInvalidRequest, "invalid request: %v", err)
	}
	if req.JSONRPC != "2.0" {
		return req, id, newRPCError(CodeInvalidRequest, `invalid request: jsonrpc must be "2.0"`)
	}
	if req.Method == "" {
		return req, id, newRPCError(CodeInvalidRequest, "invalid request: method is missing")
	}
	if req.ID != nil && !validID(req.ID) {
		return req, nullID, newRPCError(CodeInvalidRequest, "invalid request: id must be a string or a number")
	}
	return req, id, nil
}

// validID reports whether raw is a JSON string or number.
func validID(raw json.RawMessage) bool {
	if len(raw) == 0 {
		return false
	}
	c := raw[0]
	return c == '"' || c == '-' || (c >= '0' && c <= '9')
}

// decodeParams decodes params into dst, which must be a JSON object; a
// missing params decodes as {} when optional.
func decodeParams(params json.RawMessage, dst any, optional bool) *rpcError {
	p := bytes.TrimSpace(params)
	if len(p) == 0 || bytes.Equal(p, []byte("null")) {
		if optional {
			return nil
		}
		return newRPCError(CodeInvalidParams, "invalid params: params are required")
	}
	if p[0] != '{' {
		return newRPCError(CodeInvalidParams, "invalid params: params must be a JSON object")
	}
	if err := json.Unmarshal(p, dst); err != nil {
		return newRPCError(CodeInvalidParams, "invalid params: %v", err)
	}
	return nil
}
