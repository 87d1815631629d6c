package wsc

import (
	"errors"
	"fmt"

	"github.com/coder/websocket"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/httpc"
)

// CloseOutcome returns the outcome of a connection that ended with err, as
// returned by a read of github.com/coder/websocket, by the close code it
// carries:
//
//   - OK for nil, 1000 (normal closure), 1001 (going away) and 1005 (a
//     close frame without a code): the peer said goodbye;
//   - ProtocolError for 1002 (protocol error) and 1007 (invalid payload),
//     and for a received message over the read limit
//     (websocket.ErrMessageTooBig, which closes with 1009);
//   - TransportError for 1006 and 1015 (abnormal closure, TLS failure:
//     codes that only stand for a lost connection);
//   - AppError for every other code: 1003, 1008 (policy violation), 1009
//     sent by the target, 1010, 1011 (internal error), 1012 (service
//     restart), 1013 (try again later), 1014, and the application's own
//     3000–4999;
//   - for an end without a close frame, httpc.Classify: Timeout for a
//     deadline, TransportError for a reset or closed connection.
//
// A connection the target closed with 1000 or 1001 while its user held it
// is still counted in Stats.Dropped.
func CloseOutcome(err error) loadtest.Outcome {
	if err == nil {
		return loadtest.OK
	}
	if errors.Is(err, websocket.ErrMessageTooBig) {
		return loadtest.ProtocolError
	}
	switch code := websocket.CloseStatus(err); code {
	case -1:
		return httpc.Classify(err)
	case websocket.StatusNormalClosure, websocket.StatusGoingAway, websocket.StatusNoStatusRcvd:
		return loadtest.OK
	case websocket.StatusProtocolError, websocket.StatusInvalidFramePayloadData:
		return loadtest.ProtocolError
	case websocket.StatusAbnormalClosure, websocket.StatusTLSHandshake:
		return loadtest.TransportError
	default:
		return loadtest.AppError
	}
}

// endResponse returns the KindConn sample of a connection that ended with
// err (from its reader). own says the connection was being closed by its
// user: then it ended as asked, OK, unless the target answered the close
// with a code CloseOutcome does not take as OK.
func endResponse(err error, own bool, limit int64) loadtest.Response {
	o := CloseOutcome(err)
	code := websocket.CloseStatus(err)
	if own && (code == -1 || o == loadtest.OK) {
		return loadtest.Response{Outcome: loadtest.OK}
	}
	r := loadtest.Response{Outcome: o}
	var ce websocket.CloseError
	switch {
	case errors.As(err, &ce):
		r.Err = &closeError{code: int(ce.Code), reason: ce.Reason, err: err}
	case errors.Is(err, websocket.ErrMessageTooBig):
		r.Err = fmt.Errorf("wsc: the target sent a message over MaxMessageSize (%d bytes); raise Config.MaxMessageSize if it is expected: %w", limit, err)
	default:
		r.Err = fmt.Errorf("wsc: the connection ended without a close frame: %w", err)
	}
	return r
}

// closeError is the Err of a KindConn sample for a connection the target
// closed: its code and reason first, where a result's error list shows
// them, wrapping the read's error so that websocket.CloseStatus still
// finds the code.
type closeError struct {
	code   int
	reason string
	err    error
}

func (e *closeError) Error() string {
	return fmt.Sprintf("wsc: the target closed the connection with code %d (%s), reason %q", e.code, websocket.StatusCode(e.code), e.reason)
}

func (e *closeError) Unwrap() error { return e.err }
