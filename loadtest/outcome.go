package loadtest

import (
	"time"
)

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

// StatusOutcome classifies an HTTP status code: 2xx is OK, 3xx HTTP3xx (a
// redirect not followed), 4xx HTTP4xx, 5xx HTTP5xx.
func StatusOutcome(code int) Outcome {
	switch {
	case code >= 500:
		return HTTP5xx
	case code >= 400:
		return HTTP4xx
	case code >= 300:
		return HTTP3xx
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
