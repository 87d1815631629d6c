// Package server is relay, a small MCP-style tool gateway that Headroom's
// scenarios measure: the reference system under test.
//
// A client authenticates with a bearer token (users.token_hash holds its
// SHA-256, see schema.TokenHash), then speaks JSON-RPC 2.0 on POST /mcp:
// initialize, tools/list (the tools of the user's connectors, fetched from
// each connector's upstream and named "<connector>__<tool>"), tools/call
// (forwarded to the owning connector; an upstream failure or timeout comes
// back as a tool result with isError true). Every call writes a usage row and
// an event row, and the event is fanned out to the user's held streams
// (GET /mcp, Accept: text/event-stream) and to the workspace's watchers
// (GET /api/events). GET /api/dashboard aggregates the usage table.
//
// The relay also speaks the stateless revision 2026-07-28 (SEP-2575),
// told apart per request by its MCP-Protocol-Version header or
// params._meta: server/discover instead of initialize, no session, the
// relay's serverInfo in every result's _meta, and the user's stream held
// as the answer to a subscriptions/listen request.
//
// Storage is PostgreSQL (pgx; events fan out through LISTEN/NOTIFY so every
// replica delivers every event) or an embedded SQLite file (modernc.org/sqlite;
// fan-out in process).
//
// Idle held streams cost no goroutine: a stream's connection is hijacked,
// registered with a sharded hub and written to by the hub's few goroutines
// (events and keepalives), so memory per idle stream is the socket's own
// state and a small record.
//
// Wire it with [ConfigFromEnv], [New], then [Server.Serve] or
// [Server.Handler], and [Server.Shutdown] to drain.
package server
