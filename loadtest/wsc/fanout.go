package wsc

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
)

// ErrNoWrittenAt is returned by a written-time extractor for a message that
// carries no written time: such a message has no fan-out delay, and is not
// malformed.
var ErrNoWrittenAt = errors.New("wsc: the message carries no written time")

// Layouts of numeric written times, for WrittenAtField: the field is a JSON
// number of seconds (fraction allowed), milliseconds, microseconds or
// nanoseconds since the Unix epoch.
const (
	UnixSeconds = "unix"
	UnixMillis  = "unixmilli"
	UnixMicros  = "unixmicro"
	UnixNanos   = "unixnano"
)

// WrittenAtField returns an extractor of the time a message was written
// from a JSON field name in the message, found by its quoted name without
// decoding the whole document (so at any depth, such as inside "params").
// A string value is parsed with the layouts in turn (time.Parse layouts;
// default time.RFC3339Nano, as in
// {"written_at":"2026-11-30T04:00:00.123456789Z"}); a number value needs
// one of UnixSeconds, UnixMillis, UnixMicros or UnixNanos among the
// layouts ({"ts":1796011200123} with UnixMillis). A message without the
// field gives ErrNoWrittenAt; a value that does not parse gives an error
// naming the value and the fix, and the connection counts it as malformed
// rather than leaving it out of the fan-out delays in silence.
func WrittenAtField(name string, layouts ...string) func(msg []byte) (time.Time, error) {
	if len(layouts) == 0 {
		layouts = []string{time.RFC3339Nano}
	}
	key := []byte(`"` + name + `"`)
	return func(msg []byte) (time.Time, error) {
		i := bytes.Index(msg, key)
		if i < 0 {
			return time.Time{}, ErrNoWrittenAt
		}
		d := bytes.TrimLeft(msg[i+len(key):], " \t\r\n")
		if len(d) == 0 || d[0] != ':' {
			return time.Time{}, ErrNoWrittenAt
		}
		d = bytes.TrimLeft(d[1:], " \t\r\n")
		if len(d) > 0 && d[0] == '"' {
			end := bytes.IndexByte(d[1:], '"')
			if end < 0 {
				return time.Time{}, fmt.Errorf("wsc: %s holds an unterminated string", name)
			}
			v := string(d[1 : 1+end])
			for _, l := range layouts {
				if t, err := time.Parse(l, v); err == nil {
					return t, nil
				}
			}
			return time.Time{}, fmt.Errorf("wsc: %s %q does not parse with %q; give its layout: wsc.WrittenAtField(%q, \"2006-01-02 15:04:05.000Z07:00\")", name, v, layouts, name)
		}
		end := bytes.IndexAny(d, ",}] \t\r\n")
		if end < 0 {
			end = len(d)
		}
		v := string(d[:end])
		n, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsInf(n, 0) || math.IsNaN(n) {
			return time.Time{}, fmt.Errorf("wsc: %s holds %q, neither a string nor a number", name, v)
		}
		for _, l := range layouts {
			switch l {
			case UnixSeconds:
				sec, frac := math.Modf(n)
				return time.Unix(int64(sec), int64(frac*1e9)), nil
			case UnixMillis:
				return time.UnixMicro(int64(n * 1e3)), nil
			case UnixMicros:
				return time.UnixMicro(int64(n)), nil
			case UnixNanos:
				return time.Unix(0, int64(n)), nil
			}
		}
		return time.Time{}, fmt.Errorf("wsc: %s is the number %s; say its unit: wsc.WrittenAtField(%q, wsc.UnixMillis) (or UnixSeconds, UnixMicros, UnixNanos)", name, v, name)
	}
}
