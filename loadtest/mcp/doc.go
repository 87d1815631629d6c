// Package mcp is an MCP (Model Context Protocol) client for load tests:
// JSON-RPC 2.0 over streamable HTTP on top of package httpc, one Client per
// modeled user. It keeps the Mcp-Session-Id that initialize returns, sends
// the bearer token and the protocol revision (a parameter, so a scenario can
// run one workload on two revisions), and maps every answer to one
// loadtest.Outcome:
//
//   - a result: OK;
//   - a tools/call result with isError true: AppError (*ToolError);
//   - a JSON-RPC error object: AppError (*RPCError, keeping the code);
//   - an HTTP failure: its HTTP outcome (HTTP4xx, HTTP5xx), TransportError
//     or Timeout, as httpc classifies it;
//   - malformed JSON, a response that is neither result nor error, or a
//     mismatched id: ProtocolError, with an excerpt kept in Err.
//
// A response framed as an event stream (Content-Type text/event-stream, as
// streamable HTTP allows) is read through package sse's parser. The user's
// notification stream (GET with Accept: text/event-stream) is opened through
// an sse.Group with StreamHeaders.
package mcp
