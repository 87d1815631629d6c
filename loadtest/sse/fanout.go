package sse

import (
	"bytes"
	"time"
)

// WrittenAtField returns an extractor of the time an event was written from
// a top-level-looking JSON string field name in the event's data, holding an
// RFC 3339 time (nanoseconds optional), such as
// {"id":7,"written_at":"2026-11-30T04:00:00.123456789Z"}. The field is found
// by its quoted name, without decoding the whole document.
func WrittenAtField(name string) func(ev Event) (time.Time, bool) {
	key := []byte(`"` + name + `"`)
	return func(ev Event) (time.Time, bool) {
		d := ev.Data
		i := bytes.Index(d, key)
		if i < 0 {
			return time.Time{}, false
		}
		d = bytes.TrimLeft(d[i+len(key):], " \t")
		if len(d) == 0 || d[0] != ':' {
			return time.Time{}, false
		}
		d = bytes.TrimLeft(d[1:], " \t")
		if len(d) == 0 || d[0] != '"' {
			return time.Time{}, false
		}
		end := bytes.IndexByte(d[1:], '"')
		if end < 0 {
			return time.Time{}, false
		}
		t, err := time.Parse(time.RFC3339Nano, string(d[1:1+end]))
		if err != nil {
			return time.Time{}, false
		}
		return t, true
	}
}
