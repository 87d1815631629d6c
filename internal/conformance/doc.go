// Package conformance checks the project's hand-written MCP implementations
// against the official MCP Go SDK (github.com/modelcontextprotocol/go-sdk),
// over Streamable HTTP on loopback, revision by revision:
//
//   - the lean load-test client (loadtest/mcp) against a server built with
//     the SDK: handshake, tools/list, tools/call (a result and a tool error),
//     the notification stream, and the Mcp-Session-Id and
//     MCP-Protocol-Version headers;
//   - the relay (examples/relay/server, with mock upstreams behind it) and the
//     mock upstream (mockupstream), each driven by the SDK's client: handshake,
//     tools/list, tools/call (a result and a tool error), and the HTTP status
//     and content type of every exchange the SDK's client makes.
//
// Each test runs for every revision the implementation claims that the SDK
// also supports. Where the SDK is lenient (it ignores some statuses and drops
// tools it finds invalid), the tests check the wire themselves against the
// MCP specification of the revision concerned.
//
// The package holds tests only; it needs no network beyond loopback.
package conformance
