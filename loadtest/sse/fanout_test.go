package sse_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest/sse"
)

func TestWrittenAtField(t *testing.T) {
	at := time.Date(2026, 11, 30, 4, 0, 0, 123_000_000, time.UTC)
	ev := func(data string) sse.Event { return sse.Event{Data: []byte(data)} }
	for _, tc := range []struct {
		name    string
		field   func(sse.Event) (time.Time, error)
		data    string
		want    time.Time
		wantErr string // "" when it parses; ErrNoWrittenAt's text when absent
	}{
		// The default: RFC 3339 with nanoseconds.
		{"rfc3339", sse.WrittenAtField("written_at"), `{"id":7,"written_at":"2026-11-30T04:00:00.123Z"}`, at, ""},
		// A common database layout, given.
		{"layout", sse.WrittenAtField("ts", "2006-01-02 15:04:05.000Z07:00"), `{"ts": "2026-11-30 04:00:00.123Z"}`, at, ""},
		// ...and not given: an error naming the value and the fix, never a silent skip.
		{"layout missing", sse.WrittenAtField("ts"), `{"ts":"2026-11-30 04:00:00.123Z"}`, time.Time{}, `ts "2026-11-30 04:00:00.123Z" does not parse`},
		// Unix milliseconds as a number.
		{"unix millis", sse.WrittenAtField("ts", sse.UnixMillis), `{"ts":1796011200123,"x":1}`, at, ""},
		// Unix seconds with a fraction.
		{"unix seconds", sse.WrittenAtField("ts", sse.UnixSeconds), `{"ts":1796011200.123}`, at, ""},
		// A number without its unit.
		{"number, no unit", sse.WrittenAtField("ts"), `{"ts":1796011200123}`, time.Time{}, "say its unit"},
		// No such field: no fan-out delay, not malformed.
		{"absent", sse.WrittenAtField("written_at"), `{"id":7}`, time.Time{}, sse.ErrNoWrittenAt.Error()},
	} {
		t.Run("case="+tc.name, func(t *testing.T) {
			got, err := tc.field(ev(tc.data))
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.WithinDuration(t, tc.want, got, time.Microsecond)
		})
	}
}
