package sse

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/headroom-dev/headroom/loadtest/httpc"
)

// recorder is a Handler that writes what it receives as text lines.
type recorder struct{ out []string }

func (r *recorder) Event(ev Event) {
	r.out = append(r.out, fmt.Sprintf("event type=%s id=%s data=%q", ev.Type, ev.ID, ev.Data))
}
func (r *recorder) Comment(text []byte)   { r.out = append(r.out, fmt.Sprintf("comment %q", text)) }
func (r *recorder) Retry(d time.Duration) { r.out = append(r.out, "retry "+d.String()) }
func (r *recorder) Malformed(err *httpc.ProtocolError) {
	r.out = append(r.out, "malformed "+err.Msg)
}

func TestParser(t *testing.T) {
	tests := []struct {
		name   string
		stream string
		max    int
		want   []string
	}{
		// One event with every field.
		{"fields", "id: 7\nevent: call\ndata: {\"a\":1}\nretry: 1500\n\n", 0, []string{
			"retry 1.5s", `event type=call id=7 data="{\"a\":1}"`}},
		// Data lines are joined with \n; the type defaults to message.
		{"multiline", "data: one\ndata:two\ndata:  three\n\n", 0, []string{
			`event type=message id= data="one\ntwo\n three"`}},
		// Comments (keepalives) are not events.
		{"comments", ": keepalive\n:\n\ndata: x\n\n", 0, []string{
			`comment " keepalive"`, `comment ""`, `event type=message id= data="x"`}},
		// CRLF and bare CR end lines too.
		{"crlf-cr", "data: a\r\n\r\ndata: b\r\rdata: c\n\n", 0, []string{
			`event type=message id= data="a"`, `event type=message id= data="b"`, `event type=message id= data="c"`}},
		// A blank line without data dispatches nothing but the id sticks.
		{"no-data", "id: 3\n\ndata: x\n\n", 0, []string{`event type=message id=3 data="x"`}},
		// An empty data field still makes an event.
		{"empty-data", "data\n\n", 0, []string{`event type=message id= data=""`}},
		// Unknown fields are ignored; a field without colon has an empty value.
		{"unknown", "foo: bar\nevent\ndata: y\n\n", 0, []string{`event type=message id= data="y"`}},
		// A byte-order mark at the very start is skipped.
		{"bom", "\xEF\xBB\xBFdata: z\n\n", 0, []string{`event type=message id= data="z"`}},
		// An incomplete event at the end is not dispatched.
		{"incomplete", "data: x\n\ndata: partial\n", 0, []string{`event type=message id= data="x"`}},
		// A non-numeric retry is a violation and is ignored.
		{"bad-retry", "retry: soon\ndata: x\n\n", 0, []string{
			"malformed sse: retry is not a number of milliseconds", `event type=message id= data="x"`}},
		// An id with NUL is a violation and is ignored.
		{"nul-id", "id: a\x00b\ndata: x\n\n", 0, []string{"malformed sse: id contains NUL", `event type=message id= data="x"`}},
		// Invalid UTF-8 is reported, the event still arrives.
		{"utf8", "data: \xff\n\n", 0, []string{"malformed sse: line is not valid UTF-8", `event type=message id= data="\xff"`}},
		// An event over the limit is skipped up to the blank line; the next one arrives.
		{"oversize-event", "data: 0123456789\ndata: 0123456789\ndata: 0123456789\n\ndata: ok\n\n", 40, []string{
			"malformed sse: event larger than MaxEventSize 40", `event type=message id= data="ok"`}},
		// A line over the limit, split across chunks, is skipped with its event.
		{"oversize-line", "data: " + strings.Repeat("x", 100) + "\ndata: more\n\ndata: ok\n\n", 40, []string{
			"malformed sse: event larger than MaxEventSize 40", `event type=message id= data="ok"`}},
	}
	for _, tt := range tests {
		t.Run("case="+tt.name, func(t *testing.T) {
			// Whole, byte by byte, and split at every position: same result.
			whole := &recorder{}
			p := &Parser{Handler: whole, MaxEventSize: tt.max}
			p.Feed([]byte(tt.stream))
			assert.Equal(t, tt.want, whole.out)

			bytewise := &recorder{}
			p = &Parser{Handler: bytewise, MaxEventSize: tt.max}
			for i := range len(tt.stream) {
				p.Feed([]byte{tt.stream[i]})
			}
			assert.Equal(t, tt.want, bytewise.out, "fed byte by byte")

			for i := 1; i < len(tt.stream); i++ {
				split := &recorder{}
				p = &Parser{Handler: split, MaxEventSize: tt.max}
				p.Feed([]byte(tt.stream[:i]))
				p.Feed([]byte(tt.stream[i:]))
				if !assert.Equal(t, tt.want, split.out, "split at %d", i) {
					break
				}
			}
		})
	}
}

func TestParser_ResetKeepsLastEventID(t *testing.T) {
	r := &recorder{}
	p := &Parser{Handler: r}
	p.Feed([]byte("id: 41\ndata: a\n\nid: 42\ndata: half"))
	assert.True(t, p.Pending())
	p.Reset()
	assert.False(t, p.Pending())
	assert.Equal(t, "42", string(p.LastEventID()), "an id line applies before its event completes")
	p.Feed([]byte("data: b\n\n"))
	assert.Equal(t, []string{`event type=message id=41 data="a"`, `event type=message id=42 data="b"`}, r.out)
}

func TestParser_ZeroAllocsPerEvent(t *testing.T) {
	p := &Parser{Handler: nopHandler{}}
	msg := []byte("id: 9\nevent: call\ndata: {\"written_at\":\"2026-01-01T00:00:00Z\"}\n\n: keepalive\n\n")
	p.Feed(msg)
	allocs := testing.AllocsPerRun(100, func() { p.Feed(msg) })
	assert.Zero(t, allocs)
}

type nopHandler struct{}

func (nopHandler) Event(Event)                    {}
func (nopHandler) Comment([]byte)                 {}
func (nopHandler) Retry(time.Duration)            {}
func (nopHandler) Malformed(*httpc.ProtocolError) {}
