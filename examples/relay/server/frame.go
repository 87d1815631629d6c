package server

import (
	"strconv"
	"time"
)

// writtenAtLayout formats Event.WrittenAt: RFC 3339, UTC, nine fractional digits.
const writtenAtLayout = "2006-01-02T15:04:05.000000000Z07:00"

// frame is one server-sent event, encoded once and written to every
// stream it goes to: raw for a stream written as is, chunk for a hijacked
// HTTP/1.1 stream that frames its body with chunked transfer coding.
type frame struct {
	userID, workspaceID int64
	id                  int64
	raw, chunk          []byte
}

// newFrame encodes ev as "id: …\nevent: <kind>\ndata: <json>\n\n". The data
// line is one JSON object: id, workspace_id, user_id, kind, written_at and
// the payload's fields.
func newFrame(ev event) *frame {
	b := make([]byte, 0, 160+len(ev.Payload))
	b = append(b, "id: "...)
	b = strconv.AppendInt(b, ev.ID, 10)
	b = append(b, "\nevent: "...)
	b = append(b, ev.Kind...)
	b = append(b, "\ndata: "...)
	b = appendEventJSON(b, ev)
	b = append(b, "\n\n"...)
	return &frame{userID: ev.UserID, workspaceID: ev.WorkspaceID, id: ev.ID, raw: b, chunk: chunked(b)}
}

// appendEventJSON appends ev as the one-line JSON object of its data line.
func appendEventJSON(b []byte, ev event) []byte {
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, ev.ID, 10)
	b = append(b, `,"workspace_id":`...)
	b = strconv.AppendInt(b, ev.WorkspaceID, 10)
	b = append(b, `,"user_id":`...)
	b = strconv.AppendInt(b, ev.UserID, 10)
	b = append(b, `,"kind":`...)
	b = strconv.AppendQuote(b, ev.Kind)
	b = append(b, `,"written_at":"`...)
	b = ev.WrittenAt.UTC().AppendFormat(b, writtenAtLayout)
	b = append(b, '"')
	p := ev.Payload
	switch {
	case len(p) > 2 && p[0] == '{' && p[len(p)-1] == '}':
		// Splice the payload object's fields in: it was produced by
		// json.Marshal, so it is one line.
		b = append(b, ',')
		b = append(b, p[1:]...)
	case len(p) > 0 && p != "{}":
		b = append(b, `,"payload":`...)
		b = strconv.AppendQuote(b, p)
		b = append(b, '}')
	default:
		b = append(b, '}')
	}
	return b
}

// chunked returns p framed as one HTTP/1.1 chunk.
func chunked(p []byte) []byte {
	b := make([]byte, 0, len(p)+12)
	b = strconv.AppendInt(b, int64(len(p)), 16)
	b = append(b, "\r\n"...)
	b = append(b, p...)
	return append(b, "\r\n"...)
}

// staticFrame returns a frame with fixed bytes.
func staticFrame(s string) *frame {
	return &frame{raw: []byte(s), chunk: chunked([]byte(s))}
}

var (
	keepaliveFrame = staticFrame(": keepalive\n\n")
	connectedFrame = staticFrame(": connected\n\n")
	shutdownFrame  = staticFrame("event: shutdown\ndata: {\"reason\":\"the relay is shutting down; reconnect\"}\n\n")
)

// lastChunk ends a chunked body.
var lastChunk = []byte("0\r\n\r\n")

// formatWrittenAt formats t as events carry it.
func formatWrittenAt(t time.Time) string { return t.UTC().Format(writtenAtLayout) }
