package result

import "fmt"

// Outcome classifies how one request ended. Every request ends in exactly
// one outcome; only OK counts towards throughput.
type Outcome uint8

// The outcomes, in the order results list them.
const (
	// OK is a successful answer.
	OK Outcome = iota
	// AppError is an answer the application marked as failed: a tool
	// error (MCP isError), a JSON-RPC error, a wrong body.
	AppError
	// HTTP3xx is an HTTP status in 300–399: a redirect the client did not
	// follow, no answer to what was asked (a client may expect one: see
	// httpc.Expect).
	HTTP3xx
	// HTTP4xx is an HTTP status in 400–499.
	HTTP4xx
	// HTTP5xx is an HTTP status in 500–599.
	HTTP5xx
	// TransportError is a failed dial, a reset or closed connection, a TLS
	// failure: no answer at all.
	TransportError
	// Timeout is a request that hit its deadline.
	Timeout
	// ProtocolError is an answer that broke the protocol: a malformed
	// event stream, an oversize event, a mismatched JSON-RPC id.
	ProtocolError
	// Dropped is an arrival the generator could not send in time because
	// no worker was free; it was never sent.
	Dropped

	// NumOutcomes is the number of outcomes.
	NumOutcomes = int(Dropped) + 1
)

var outcomeNames = [NumOutcomes]string{"ok", "app_error", "http_3xx", "http_4xx", "http_5xx", "transport_error", "timeout", "protocol_error", "dropped"}

// String returns the outcome's name as results spell it ("ok", "http_5xx").
func (o Outcome) String() string {
	if int(o) < NumOutcomes {
		return outcomeNames[o]
	}
	return fmt.Sprintf("outcome(%d)", o)
}

// ParseOutcome returns the outcome named s, as spelled by String.
func ParseOutcome(s string) (Outcome, error) {
	for i, n := range outcomeNames {
		if n == s {
			return Outcome(i), nil
		}
	}
	return 0, fmt.Errorf("unknown outcome %q; known: %v", s, outcomeNames)
}

// MarshalText implements encoding.TextMarshaler.
func (o Outcome) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (o *Outcome) UnmarshalText(b []byte) error {
	v, err := ParseOutcome(string(b))
	*o = v
	return err
}
