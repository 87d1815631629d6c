package mockupstream_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/mockupstream"
)

// env returns a getenv over vars.
func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestConfigFromEnv_Defaults(t *testing.T) {
	c, err := mockupstream.ConfigFromEnv(env(nil))
	require.NoError(t, err)
	assert.Equal(t, ":8765", c.Addr)
	assert.Equal(t, mockupstream.AuthNone, c.Auth)
	assert.Equal(t, mockupstream.HoldPark, c.Hold)
	assert.False(t, c.LogRequests)
	assert.Equal(t, mockupstream.Envelope(), c.Behavior, "no variables: the published envelope")
}

func TestConfigFromEnv(t *testing.T) {
	for _, tc := range []struct {
		name  string
		vars  map[string]string
		check func(t *testing.T, c mockupstream.Config)
	}{
		// The envelope variables of the published write-up.
		{"vars=envelope", map[string]string{"PORT": "9000", "AUTH_MODE": "bearer", "LOG_REQUESTS": "1", "TOOL_COUNT": "5",
			"LIST_LATENCY_MS": "100", "LIST_JITTER_MS": "10", "CALL_LATENCY_MS": "2000", "CALL_JITTER_MS": "0", "RESPONSE_BYTES": "2048"},
			func(t *testing.T, c mockupstream.Config) {
				assert.Equal(t, ":9000", c.Addr)
				assert.Equal(t, mockupstream.AuthBearer, c.Auth)
				assert.True(t, c.LogRequests)
				b := c.Behavior
				assert.Equal(t, 5, b.ToolCount)
				assert.Equal(t, mockupstream.Latency{Median: ms(100), Jitter: ms(10)}, b.List)
				assert.Equal(t, mockupstream.Latency{Median: ms(2000)}, b.Call)
				assert.Equal(t, []mockupstream.Size{{Weight: 1, Bytes: 2048}, {Weight: 0, Bytes: 1 << 20, Jitter: 64 << 10}}, b.Sizes)
			}},
		// The calibrated preset, seeded.
		{"vars=calibrated", map[string]string{"MODEL": "calibrated", "SEED": "7", "HOST": "127.0.0.1", "PORT": "0"},
			func(t *testing.T, c mockupstream.Config) {
				want := mockupstream.Calibrated()
				want.Seed = 7
				assert.Equal(t, want, c.Behavior)
				assert.Equal(t, "127.0.0.1:0", c.Addr)
			}},
		// CALL_P95_MS alone turns the envelope's call latency log-normal.
		{"vars=p95 over envelope", map[string]string{"CALL_LATENCY_MS": "1200", "CALL_P95_MS": "12000", "CALL_CAP_MS": "50000"},
			func(t *testing.T, c mockupstream.Config) {
				assert.Equal(t, mockupstream.Latency{Median: ms(1200), P95: ms(12000), Cap: ms(50000)}, c.Behavior.Call)
			}},
		// CALL_JITTER_MS alone turns the calibrated call latency fixed.
		{"vars=jitter over calibrated", map[string]string{"MODEL": "calibrated", "CALL_JITTER_MS": "100"},
			func(t *testing.T, c mockupstream.Config) {
				assert.Equal(t, mockupstream.Latency{Median: ms(1200), Jitter: ms(100)}, c.Behavior.Call)
			}},
		// The faults and the size mix.
		{"vars=faults", map[string]string{"TOOL_ERROR_FRACTION": "0.08", "HTTP_5XX_FRACTION": "0.01", "HTTP_5XX_STATUS": "502",
			"RESET_FRACTION": "0.02", "HANG_FRACTION": "0.03", "MAX_HANG_MS": "5000", "SLOW_HEADERS_FRACTION": "0.04", "SLOW_HEADERS_MS": "100",
			"LARGE_RESPONSE_FRACTION": "0.02", "LARGE_RESPONSE_BYTES": "1600"},
			func(t *testing.T, c mockupstream.Config) {
				b := c.Behavior
				assert.Equal(t, 0.08, b.ToolErrors)
				assert.Equal(t, mockupstream.Faults{HTTP5xx: 0.01, Status: 502, Reset: 0.02, Hang: 0.03, MaxHang: ms(5000), SlowHeaders: 0.04, HeaderDelay: ms(100)}, b.Faults)
				assert.Equal(t, []mockupstream.Size{{Weight: 0.98, Bytes: 1024}, {Weight: 0.02, Bytes: 1600, Jitter: 100}}, b.Sizes)
			}},
		// BEHAVIOR gives the whole model as JSON.
		{"vars=BEHAVIOR", map[string]string{"BEHAVIOR": `{"tool_count":3,"call":{"median":"5ms"}}`, "HOLD": "sleep"},
			func(t *testing.T, c mockupstream.Config) {
				assert.Equal(t, mockupstream.Behavior{ToolCount: 3, Call: mockupstream.Latency{Median: ms(5)}}, c.Behavior)
				assert.Equal(t, mockupstream.HoldSleep, c.Hold)
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := mockupstream.ConfigFromEnv(env(tc.vars))
			require.NoError(t, err)
			require.NoError(t, c.Behavior.Validate())
			tc.check(t, c)
		})
	}
}

func TestConfigFromEnv_InvalidNamesTheVariable(t *testing.T) {
	for _, tc := range []struct {
		name string
		vars map[string]string
		want string // in the message
	}{
		// A negative latency.
		{"var=CALL_LATENCY_MS", map[string]string{"CALL_LATENCY_MS": "-5"}, "CALL_LATENCY_MS"},
		// A negative jitter.
		{"var=LIST_JITTER_MS", map[string]string{"LIST_JITTER_MS": "-1"}, "LIST_JITTER_MS"},
		// A p95 below the median.
		{"var=CALL_P95_MS", map[string]string{"MODEL": "calibrated", "CALL_P95_MS": "500"}, "CALL_P95_MS"},
		// A cap below the p95.
		{"var=CALL_CAP_MS", map[string]string{"MODEL": "calibrated", "CALL_CAP_MS": "5000"}, "CALL_CAP_MS"},
		// Fractions outside [0, 1].
		{"var=TOOL_ERROR_FRACTION", map[string]string{"TOOL_ERROR_FRACTION": "1.2"}, "TOOL_ERROR_FRACTION"},
		{"var=HTTP_5XX_FRACTION", map[string]string{"HTTP_5XX_FRACTION": "-0.1"}, "HTTP_5XX_FRACTION"},
		{"var=RESET_FRACTION", map[string]string{"RESET_FRACTION": "NaN"}, "RESET_FRACTION"},
		// Fractions summing past 1 name them all.
		{"var=sum", map[string]string{"TOOL_ERROR_FRACTION": "0.7", "HANG_FRACTION": "0.7"}, "HANG_FRACTION"},
		// Unknown AUTH_MODE.
		{"var=AUTH_MODE", map[string]string{"AUTH_MODE": "basic"}, "AUTH_MODE"},
		// Not a number.
		{"var=TOOL_COUNT", map[string]string{"TOOL_COUNT": "many"}, "TOOL_COUNT"},
		{"var=PORT", map[string]string{"PORT": "http"}, "PORT"},
		{"var=LOG_REQUESTS", map[string]string{"LOG_REQUESTS": "maybe"}, "LOG_REQUESTS"},
		{"var=SEED", map[string]string{"SEED": "-1"}, "SEED"},
		// Unknown preset or hold mode.
		{"var=MODEL", map[string]string{"MODEL": "fast"}, "MODEL"},
		{"var=HOLD", map[string]string{"HOLD": "spin"}, "HOLD"},
		// Slow headers without a delay.
		{"var=SLOW_HEADERS_MS", map[string]string{"SLOW_HEADERS_FRACTION": "0.1"}, "SLOW_HEADERS_MS"},
		// A 5xx status that is not 5xx.
		{"var=HTTP_5XX_STATUS", map[string]string{"HTTP_5XX_STATUS": "404"}, "HTTP_5XX_STATUS"},
		// BEHAVIOR excludes the single variables and must be valid.
		{"var=BEHAVIOR+TOOL_COUNT", map[string]string{"BEHAVIOR": `{}`, "TOOL_COUNT": "3"}, "TOOL_COUNT"},
		{"var=BEHAVIOR", map[string]string{"BEHAVIOR": `{"call":{"median":-1}}`}, "BEHAVIOR: call.median"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := mockupstream.ConfigFromEnv(env(tc.vars))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestNew_RejectsBadConfig(t *testing.T) {
	_, err := mockupstream.New(mockupstream.Config{Auth: "basic"})
	assert.ErrorContains(t, err, "auth mode")
	_, err = mockupstream.New(mockupstream.Config{Hold: "spin"})
	assert.ErrorContains(t, err, "hold mode")
	_, err = mockupstream.New(mockupstream.Config{Behavior: mockupstream.Behavior{ToolErrors: 2}})
	assert.ErrorContains(t, err, "tool_errors")
}
