package loadtest

import (
	"fmt"
	"time"
)

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

var outcomeNames = [NumOutcomes]string{"ok", "app_error", "http_4xx", "http_5xx", "transport_error", "timeout", "protocol_error", "dropped"}

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

// Response is what a request function reports: its outcome, the bytes it
// received and, for a failure, an error whose text a result keeps as a
// sample. Err is optional and may be nil for any outcome.
type Response struct {
	Outcome Outcome
	Bytes   int64
	Err     error
	// Queued is how long the request waited inside the generator before it
	// could be sent, such as for a free connection of an HTTP client's
	// pool. That wait is the generator's, not the target's: a step where it
	// is material is invalid (see SelfCheck.MaxQueueWait).
	Queued time.Duration
}

// StatusOutcome classifies an HTTP status code: 2xx and 3xx are OK.
func StatusOutcome(code int) Outcome {
	switch {
	case code >= 500:
		return HTTP5xx
	case code >= 400:
		return HTTP4xx
	case code >= 200:
		return OK
	default:
		return ProtocolError
	}
}

// Sink receives samples measured outside a request/response pair, such as
// the fan-out delay of an event on a held stream. Both *Recorder and *User
// implement it; protocol clients accept a Sink so they can be tested alone.
type Sink interface {
	// Record adds one sample of kind with the given latency.
	Record(kind string, latency time.Duration, r Response)
}
