package mockupstream

import "fmt"

// Outcome is how the upstream ended one request. Every counted request ends
// in exactly one outcome; [Stats] counts them by name.
type Outcome uint8

// The outcomes. The first six are drawn from the behaviour model; the rest
// follow from the request or the client.
const (
	// OK is a normal answer.
	OK Outcome = iota
	// ToolError is a tools/call answered with result.isError true.
	ToolError
	// HTTP5xx is an injected HTTP 5xx status (Faults.Status).
	HTTP5xx
	// Reset is a connection reset: the upstream closed the connection
	// with SO_LINGER 0, so the client reads ECONNRESET.
	Reset
	// Hang is a request never answered: held until the client gave up or
	// Faults.MaxHang passed, then the connection was closed.
	Hang
	// SlowHeaders is a normal answer whose headers were held
	// Faults.HeaderDelay longer than the drawn latency.
	SlowHeaders
	// RPCError is a JSON-RPC error answer (-32700, -32600, -32601, -32602).
	RPCError
	// HTTP4xx is a rejected request: 401 without a valid bearer token,
	// 400 for bad /echo parameters, 413 for an oversize body.
	HTTP4xx
	// ClientGone is a request whose client left before its answer was
	// due, or whose answer could not be written (best effort: a write
	// into a closed socket can still succeed).
	ClientGone
	// Aborted is a request cut off because the server shut down before
	// its answer was due.
	Aborted

	// NumOutcomes is the number of outcomes.
	NumOutcomes = int(Aborted) + 1
)

var outcomeNames = [NumOutcomes]string{"ok", "tool_error", "http_5xx", "reset", "hang", "slow_headers", "rpc_error", "http_4xx", "client_gone", "aborted"}

// String returns the outcome's name as stats spell it ("ok", "http_5xx").
func (o Outcome) String() string {
	if int(o) < NumOutcomes {
		return outcomeNames[o]
	}
	return fmt.Sprintf("outcome(%d)", o)
}
