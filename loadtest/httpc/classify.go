package httpc

import (
	"context"
	"errors"
	"net"
	"os"
	"strconv"

	"github.com/headroom-dev/headroom/loadtest"
)

// StatusError is the error of an answer whose status code is not 2xx.
type StatusError struct {
	// Code is the HTTP status code.
	Code int
}

// Error returns "HTTP <code>".
func (e *StatusError) Error() string { return "HTTP " + strconv.Itoa(e.Code) }

// statusErrs holds one StatusError per code so that failing answers do not
// allocate.
var statusErrs = func() (a [600]*StatusError) {
	for i := range a {
		a[i] = &StatusError{Code: i}
	}
	return a
}()

// StatusResponse returns the Response for an answer with status code and
// bytes of body: OK for 2xx, or the HTTP outcome (HTTP3xx for a redirect,
// which is never followed) with a *StatusError.
func StatusResponse(code int, bytes int64) loadtest.Response {
	o := loadtest.StatusOutcome(code)
	if o == loadtest.OK {
		return loadtest.Response{Outcome: o, Bytes: bytes}
	}
	var err error
	if code >= 0 && code < len(statusErrs) {
		err = statusErrs[code]
	} else {
		err = &StatusError{Code: code}
	}
	return loadtest.Response{Outcome: o, Bytes: bytes, Err: err}
}

// ProtocolError is an answer that is not valid HTTP or breaks a limit: a bad
// status line, broken chunked framing, a body over MaxBodySize, a malformed
// event stream.
type ProtocolError struct {
	// Msg says what was wrong.
	Msg string
	// Sample is a short excerpt of the offending bytes, quoted, or "".
	Sample string
}

// Error returns the message with the sample, if any.
func (e *ProtocolError) Error() string {
	if e.Sample == "" {
		return e.Msg
	}
	return e.Msg + ": " + e.Sample
}

// NewProtocolError returns a ProtocolError with msg and a quoted excerpt of
// at most 64 bytes of sample.
func NewProtocolError(msg string, sample []byte) *ProtocolError {
	if len(sample) > 64 {
		return &ProtocolError{Msg: msg, Sample: strconv.Quote(string(sample[:64])) + "…"}
	}
	if len(sample) == 0 {
		return &ProtocolError{Msg: msg}
	}
	return &ProtocolError{Msg: msg, Sample: strconv.Quote(string(sample))}
}

// errPoolTimeout is returned when no connection became free before the
// request's deadline.
var errPoolTimeout = &timeoutError{"httpc: no free connection before the deadline (pool saturated)"}

type timeoutError struct{ msg string }

func (e *timeoutError) Error() string   { return e.msg }
func (e *timeoutError) Timeout() bool   { return true }
func (e *timeoutError) Temporary() bool { return true }

// Classify returns the outcome of a request that failed with err: Timeout
// for a deadline (context.DeadlineExceeded, os.ErrDeadlineExceeded or any
// net.Error whose Timeout is true), ProtocolError for a *ProtocolError,
// the HTTP outcome for a *StatusError, TransportError for anything else
// (context.Canceled included), and OK for nil.
func Classify(err error) loadtest.Outcome {
	if err == nil {
		return loadtest.OK
	}
	var pe *ProtocolError
	if errors.As(err, &pe) {
		return loadtest.ProtocolError
	}
	var se *StatusError
	if errors.As(err, &se) {
		return loadtest.StatusOutcome(se.Code)
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return loadtest.Timeout
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return loadtest.Timeout
	}
	return loadtest.TransportError
}

// ErrorResponse returns the Response for a request that failed with err,
// classified by Classify.
func ErrorResponse(err error) loadtest.Response {
	return loadtest.Response{Outcome: Classify(err), Err: err}
}
