package sse

import (
	"bytes"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/headroom-dev/headroom/loadtest/httpc"
)

// DefaultMaxEventSize is the default limit in bytes on one event (the sum of
// its field lines) and on one line.
const DefaultMaxEventSize = 64 << 10

// Event is one dispatched event. Its slices are valid only during the
// Handler call that receives it; copy what you keep.
type Event struct {
	// ID is the last event ID in effect after this event (the id field of
	// this or an earlier event), or empty.
	ID []byte
	// Type is the event field, or "message" when the event named none.
	Type []byte
	// Data is the data lines joined by "\n".
	Data []byte
}

// Handler receives what a Parser finds in a stream.
type Handler interface {
	// Event receives a dispatched event.
	Event(ev Event)
	// Comment receives the text after ':' of a comment line, such as a
	// keepalive.
	Comment(text []byte)
	// Retry receives the reconnection time of a retry field.
	Retry(d time.Duration)
	// Malformed receives a protocol violation: an oversize line or event,
	// a non-numeric retry, an id with NUL, invalid UTF-8.
	Malformed(err *httpc.ProtocolError)
}

var messageType = []byte("message")

// Parser decodes the text/event-stream format incrementally: Feed accepts
// the stream in chunks split anywhere, even inside a line ending. Lines end
// in CRLF, LF or CR; a leading byte-order mark is skipped. The zero value is
// not usable: set Handler and call Feed.
type Parser struct {
	// Handler receives events, comments, retry values and violations.
	Handler Handler
	// MaxEventSize limits one event and one line in bytes; an oversize
	// event is reported as Malformed and skipped up to the next blank
	// line. Zero means DefaultMaxEventSize.
	MaxEventSize int

	line     []byte // partial line carried between chunks
	data     []byte
	typ      []byte
	id       []byte
	hasData  bool
	size     int  // bytes of the current event so far
	skipping bool // inside an oversize event: skip to a blank line
	longLine bool // inside an oversize line: skip to its end
	lastCR   bool // the previous chunk ended in CR
	started  bool // past the first line (BOM check)
}

func (p *Parser) max() int {
	if p.MaxEventSize > 0 {
		return p.MaxEventSize
	}
	return DefaultMaxEventSize
}

// LastEventID returns the last event ID seen, to send as Last-Event-ID on
// reconnect. It is valid until the next Feed.
func (p *Parser) LastEventID() []byte { return p.id }

// Reset forgets a partial line and event (a new connection starts clean)
// but keeps the last event ID.
func (p *Parser) Reset() {
	p.line = p.line[:0]
	p.resetEvent()
	p.skipping, p.longLine, p.lastCR, p.started = false, false, false, false
}

// Pending reports whether a partial line or undispatched event is buffered.
func (p *Parser) Pending() bool { return len(p.line) > 0 || p.hasData || p.skipping }

func (p *Parser) resetEvent() {
	if cap(p.data) > 4<<10 {
		p.data = nil // do not hold a big event's buffer on an idle stream
	}
	p.data = p.data[:0]
	p.typ = p.typ[:0]
	p.hasData = false
	p.size = 0
}

// Feed parses the next chunk of the stream.
func (p *Parser) Feed(b []byte) {
	for len(b) > 0 {
		if p.lastCR {
			p.lastCR = false
			if b[0] == '\n' {
				b = b[1:]
				continue
			}
		}
		i := bytes.IndexAny(b, "\r\n")
		if i < 0 {
			p.appendPartial(b)
			return
		}
		line := b[:i]
		if b[i] == '\r' {
			p.lastCR = true
		}
		b = b[i+1:]
		if p.longLine {
			p.longLine = false
			p.line = p.line[:0]
			continue
		}
		if len(p.line) > 0 {
			if !p.appendPartial(line) {
				p.longLine = false
				p.line = p.line[:0]
				continue
			}
			line = p.line
		}
		p.processLine(line)
		p.line = p.line[:0]
		if cap(p.line) > 4<<10 {
			p.line = nil
		}
	}
}

// appendPartial adds b to the partial line, reporting an oversize line.
func (p *Parser) appendPartial(b []byte) bool {
	if p.longLine {
		return false
	}
	if len(p.line)+len(b) > p.max() {
		p.Handler.Malformed(httpc.NewProtocolError("sse: event larger than MaxEventSize "+strconv.Itoa(p.max()), append(p.line, b...)))
		p.line = p.line[:0]
		p.longLine = true
		p.skipping = true // the event it belongs to is broken too
		p.resetEvent()
		return false
	}
	p.line = append(p.line, b...)
	return true
}

var bom = []byte("\xEF\xBB\xBF")

func (p *Parser) processLine(line []byte) {
	if !p.started {
		p.started = true
		line = bytes.TrimPrefix(line, bom)
	}
	if len(line) == 0 {
		if p.skipping {
			p.skipping = false
			p.resetEvent()
			return
		}
		p.dispatch()
		return
	}
	if p.skipping {
		return
	}
	if line[0] == ':' {
		p.Handler.Comment(line[1:])
		return
	}
	if !utf8.Valid(line) {
		p.Handler.Malformed(httpc.NewProtocolError("sse: line is not valid UTF-8", line))
	}
	field, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		field, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	p.size += len(line) + 1
	if p.size > p.max() {
		p.Handler.Malformed(httpc.NewProtocolError("sse: event larger than MaxEventSize "+strconv.Itoa(p.max()), line))
		p.skipping = true
		p.resetEvent()
		return
	}
	switch string(field) {
	case "data":
		p.data = append(p.data, value...)
		p.data = append(p.data, '\n')
		p.hasData = true
	case "event":
		p.typ = append(p.typ[:0], value...)
	case "id":
		if bytes.IndexByte(value, 0) >= 0 {
			p.Handler.Malformed(httpc.NewProtocolError("sse: id contains NUL", line))
			return
		}
		p.id = append(p.id[:0], value...)
	case "retry":
		ms, err := strconv.ParseUint(string(value), 10, 32)
		if err != nil || len(value) == 0 || value[0] == '+' {
			p.Handler.Malformed(httpc.NewProtocolError("sse: retry is not a number of milliseconds", line))
			return
		}
		p.Handler.Retry(time.Duration(ms) * time.Millisecond)
	}
	// Other fields are ignored, as the format requires.
}

func (p *Parser) dispatch() {
	if !p.hasData {
		p.resetEvent()
		return
	}
	ev := Event{ID: p.id, Type: p.typ, Data: p.data[:len(p.data)-1]}
	if len(ev.Type) == 0 {
		ev.Type = messageType
	}
	p.Handler.Event(ev)
	p.resetEvent()
}
