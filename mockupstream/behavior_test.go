package mockupstream_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/mockupstream"
)

func TestBehavior_PresetsAreValid(t *testing.T) {
	for name, preset := range mockupstream.Models {
		t.Run("model="+name, func(t *testing.T) {
			require.NoError(t, preset().Validate())
		})
	}
	c := mockupstream.Calibrated()
	assert.Equal(t, 1200*time.Millisecond, c.Call.Median.D())
	assert.Equal(t, 12*time.Second, c.Call.P95.D())
	assert.Equal(t, 50*time.Second, c.Call.Cap.D())
	assert.Equal(t, 0.08, c.ToolErrors)
}

func TestBehavior_ValidateNamesTheField(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*mockupstream.Behavior)
		field  string
	}{
		// A negative latency.
		{"field=call.median", func(b *mockupstream.Behavior) { b.Call.Median = -1 }, "call.median"},
		// A p95 below the median.
		{"field=call.p95", func(b *mockupstream.Behavior) { b.Call = mockupstream.Latency{Median: ms(1000), P95: ms(500)} }, "call.p95"},
		// A log-normal needs a positive median.
		{"field=list.median", func(b *mockupstream.Behavior) { b.List = mockupstream.Latency{P95: ms(500)} }, "list.median"},
		// Jitter and p95 are two different shapes.
		{"field=call.jitter", func(b *mockupstream.Behavior) {
			b.Call = mockupstream.Latency{Median: ms(1), Jitter: ms(1), P95: ms(2)}
		}, "call.jitter"},
		// A cap below the p95 would move the p95.
		{"field=call.cap", func(b *mockupstream.Behavior) { b.Call = mockupstream.Latency{Median: ms(1), P95: ms(20), Cap: ms(10)} }, "call.cap"},
		// Fractions live in [0, 1].
		{"field=tool_errors", func(b *mockupstream.Behavior) { b.ToolErrors = 1.5 }, "tool_errors"},
		{"field=faults.reset", func(b *mockupstream.Behavior) { b.Faults.Reset = -0.1 }, "faults.reset"},
		// Together they cannot exceed 1.
		{"field=faults", func(b *mockupstream.Behavior) { b.ToolErrors, b.Faults.HTTP5xx = 0.6, 0.6 }, "faults"},
		// A 5xx fault needs a 5xx status.
		{"field=faults.status", func(b *mockupstream.Behavior) { b.Faults.Status = 404 }, "faults.status"},
		// Slow headers need a delay.
		{"field=faults.header_delay", func(b *mockupstream.Behavior) { b.Faults.SlowHeaders = 0.1 }, "faults.header_delay"},
		// Sizes are bounded.
		{"field=sizes[0].bytes", func(b *mockupstream.Behavior) { b.Sizes[0].Bytes = mockupstream.MaxBytes + 1 }, "sizes[0].bytes"},
		// A size mix needs some weight.
		{"field=sizes", func(b *mockupstream.Behavior) { b.Sizes[0].Weight = 0 }, "sizes"},
		// Tool counts are bounded.
		{"field=tool_count", func(b *mockupstream.Behavior) { b.ToolCount = -1 }, "tool_count"},
		// Latencies are at most an hour.
		{"field=faults.max_hang", func(b *mockupstream.Behavior) { b.Faults.MaxHang = mockupstream.Duration(2 * time.Hour) }, "faults.max_hang"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := mockupstream.Envelope()
			tc.change(&b)
			err := b.Validate()
			require.Error(t, err)
			fe, ok := errors.AsType[*mockupstream.FieldError](err)
			require.True(t, ok, "error %v is not a FieldError", err)
			assert.Equal(t, tc.field, fe.Field, "error: %v", err)
			_, err = mockupstream.NewModel(b)
			assert.Error(t, err, "NewModel validates too")
		})
	}
}

func TestBehavior_JSONRoundTrip(t *testing.T) {
	b := mockupstream.Calibrated()
	b.Seed = 3
	b.Faults = mockupstream.Faults{HTTP5xx: 0.01, Status: 502, Hang: 0.001, MaxHang: ms(60000), SlowHeaders: 0.01, HeaderDelay: ms(20000)}
	data, err := json.Marshal(b)
	require.NoError(t, err)
	assert.Contains(t, string(data), `"p95":"12s"`, "durations are written as Go duration strings")
	got, err := mockupstream.DecodeBehavior(data)
	require.NoError(t, err)
	assert.Equal(t, b, got)
}

func TestDecodeBehavior(t *testing.T) {
	for _, tc := range []struct {
		name    string
		json    string
		want    mockupstream.Latency // of call, when no error
		errPart string
	}{
		// Durations as Go strings.
		{"form=string", `{"call":{"median":"1.2s","p95":"12s"}}`, mockupstream.Latency{Median: ms(1200), P95: ms(12000)}, ""},
		// Durations as milliseconds.
		{"form=ms", `{"call":{"median":1200,"jitter":0.5}}`, mockupstream.Latency{Median: ms(1200), Jitter: ms(0.5)}, ""},
		// A bad duration names the field.
		{"bad=duration", `{"call":{"median":"soon"}}`, mockupstream.Latency{}, "call.median"},
		// A wrong type names the field.
		{"bad=type", `{"tool_errors":"lots"}`, mockupstream.Latency{}, "tool_errors"},
		// Unknown fields are refused, not ignored.
		{"bad=unknown", `{"calls":{}}`, mockupstream.Latency{}, `unknown field "calls"`},
		// Validation runs too.
		{"bad=p95", `{"call":{"median":"2s","p95":"1s"}}`, mockupstream.Latency{}, "call.p95"},
		// One object only.
		{"bad=trailing", `{} {}`, mockupstream.Latency{}, "trailing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := mockupstream.DecodeBehavior([]byte(tc.json))
			if tc.errPart != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.errPart)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, b.Call)
		})
	}
}
