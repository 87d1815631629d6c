package server

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConfigFromEnv(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		check   func(t *testing.T, c Config)
		wantErr []string // parts of the error; nil for none
	}{
		// Nothing set: the documented defaults.
		{name: "defaults", env: nil, check: func(t *testing.T, c Config) {
			assert.Equal(t, DefaultConfig(), c)
			assert.Equal(t, ":8080", c.Addr)
			assert.Equal(t, "relay.db", c.SQLitePath)
			assert.Equal(t, ModeAsync, c.UpstreamMode)
			assert.Equal(t, 50*time.Second, c.CallTimeout)
			assert.Equal(t, 15*time.Second, c.KeepaliveInterval)
			assert.False(t, c.Metrics)
			assert.Equal(t, "sqlite", c.Dialect())
		}},
		// Every variable set to a good value.
		{name: "all", env: map[string]string{
			"RELAY_ADDR": "127.0.0.1:9000", "DATABASE_URL": "postgres://u@h/db", "RELAY_UPSTREAM_MODE": "sync",
			"RELAY_WORKERS": "8", "RELAY_METRICS": "1", "RELAY_DRAIN_TIMEOUT": "3s", "RELAY_FAULT": "call-latency:5ms",
			"RELAY_CALL_TIMEOUT": "2s", "RELAY_KEEPALIVE_INTERVAL": "1s", "RELAY_STREAM_WRITE_TIMEOUT": "2s",
			"RELAY_MAX_BODY_BYTES": "100", "RELAY_MAX_UPSTREAM_BYTES": "200", "RELAY_AUTH_CACHE_TTL": "0s",
			"RELAY_DB_MAX_CONNS": "3", "RELAY_REPLAY_LIMIT": "10", "RELAY_LOG_LEVEL": "debug",
		}, check: func(t *testing.T, c Config) {
			assert.Equal(t, "127.0.0.1:9000", c.Addr)
			assert.Equal(t, "postgres", c.Dialect())
			assert.Equal(t, ModeSync, c.UpstreamMode)
			assert.Equal(t, 8, c.Workers)
			assert.True(t, c.Metrics)
			assert.Equal(t, 3*time.Second, c.DrainTimeout)
			assert.Equal(t, 5*time.Millisecond, c.Faults.CallLatency)
			assert.Equal(t, 2*time.Second, c.CallTimeout)
			assert.Equal(t, time.Second, c.KeepaliveInterval)
			assert.Equal(t, 2*time.Second, c.StreamWriteTimeout)
			assert.Equal(t, int64(100), c.MaxBodyBytes)
			assert.Equal(t, int64(200), c.MaxUpstreamBytes)
			assert.Zero(t, c.AuthCacheTTL)
			assert.Equal(t, 3, c.DBMaxConns)
			assert.Equal(t, 10, c.ReplayLimit)
			assert.Equal(t, slog.LevelDebug, c.LogLevel)
		}},
		// The drain policy, the listing cache and the call trace.
		{name: "drain_cache_trace", env: map[string]string{"RELAY_DRAIN_POLICY": "complete", "RELAY_LIST_CACHE_TTL": "2s",
			"RELAY_CALL_TRACE": "sampled", "RELAY_TRACE_EVERY": "7", "RELAY_DRAIN_TIMEOUT": "1s"}, check: func(t *testing.T, c Config) {
			assert.Equal(t, DrainComplete, c.DrainPolicy)
			assert.Equal(t, 2*time.Second, c.ListCacheTTL)
			assert.Equal(t, TraceSampled, c.CallTrace)
			assert.Equal(t, 7, c.TraceEvery)
			assert.Equal(t, c.CallTimeout+recordTimeout, c.DrainBudget(), "complete waits for every call, not DrainTimeout")
		}},
		// The default policy is budgeted: the drain timeout is the budget.
		{name: "drain_default", env: map[string]string{"RELAY_DRAIN_TIMEOUT": "3s"}, check: func(t *testing.T, c Config) {
			assert.Equal(t, DrainBudgeted, c.DrainPolicy)
			assert.Equal(t, 3*time.Second, c.DrainBudget())
			assert.Equal(t, TraceOff, c.CallTrace)
			assert.Zero(t, c.ListCacheTTL)
		}},
		// Minimal waits for nothing.
		{name: "drain_minimal", env: map[string]string{"RELAY_DRAIN_POLICY": "minimal"}, check: func(t *testing.T, c Config) {
			assert.Zero(t, c.DrainBudget())
		}},
		// An unknown drain policy.
		{name: "drain_policy", env: map[string]string{"RELAY_DRAIN_POLICY": "polite"}, wantErr: []string{"RELAY_DRAIN_POLICY", `"complete"`}},
		// An unknown trace posture.
		{name: "trace", env: map[string]string{"RELAY_CALL_TRACE": "some"}, wantErr: []string{"RELAY_CALL_TRACE", `"sampled"`}},
		// A zero sampling period.
		{name: "trace_every", env: map[string]string{"RELAY_TRACE_EVERY": "0"}, wantErr: []string{"RELAY_TRACE_EVERY"}},
		// A negative cache TTL is not a duration the relay takes.
		{name: "list_cache", env: map[string]string{"RELAY_LIST_CACHE_TTL": "-1s"}, wantErr: []string{"RELAY_LIST_CACHE_TTL"}},
		// A word where a number belongs.
		{name: "workers_word", env: map[string]string{"RELAY_WORKERS": "many"}, wantErr: []string{"RELAY_WORKERS", "positive integer"}},
		// An unknown mode.
		{name: "mode", env: map[string]string{"RELAY_UPSTREAM_MODE": "threads"}, wantErr: []string{"RELAY_UPSTREAM_MODE", `"async"`}},
		// Metrics must be 0 or 1.
		{name: "metrics", env: map[string]string{"RELAY_METRICS": "yes"}, wantErr: []string{"RELAY_METRICS", "0 or 1"}},
		{name: "pprof", env: map[string]string{"RELAY_PPROF": "2"}, wantErr: []string{"RELAY_PPROF", "0 or 1"}},
		// A duration without a unit.
		{name: "drain_unitless", env: map[string]string{"RELAY_DRAIN_TIMEOUT": "30"}, wantErr: []string{"RELAY_DRAIN_TIMEOUT", "30s"}},
		// The call timeout is capped at 50 s.
		{name: "call_timeout_cap", env: map[string]string{"RELAY_CALL_TIMEOUT": "51s"}, wantErr: []string{"RELAY_CALL_TIMEOUT", "at most 50s"}},
		// An unknown fault.
		{name: "fault", env: map[string]string{"RELAY_FAULT": "slow-everything"}, wantErr: []string{"RELAY_FAULT", "slow-everything", "call-latency"}},
		// Not a PostgreSQL URL.
		{name: "database_url", env: map[string]string{"DATABASE_URL": "mysql://x"}, wantErr: []string{"DATABASE_URL", "postgres://"}},
		// A SQLite path with a query.
		{name: "sqlite_path", env: map[string]string{"RELAY_SQLITE_PATH": "a.db?mode=ro"}, wantErr: []string{"RELAY_SQLITE_PATH"}},
		// A bad log level.
		{name: "log_level", env: map[string]string{"RELAY_LOG_LEVEL": "loud"}, wantErr: []string{"RELAY_LOG_LEVEL"}},
		// Several bad values: every one is named.
		{name: "several", env: map[string]string{"RELAY_WORKERS": "0", "RELAY_KEEPALIVE_INTERVAL": "soon"}, wantErr: []string{"RELAY_WORKERS", "RELAY_KEEPALIVE_INTERVAL"}},
	}
	for _, tc := range tests {
		t.Run("env="+tc.name, func(t *testing.T) {
			c, err := ConfigFromEnv(func(k string) string { return tc.env[k] })
			if tc.wantErr != nil {
				require.Error(t, err)
				for _, w := range tc.wantErr {
					assert.Contains(t, err.Error(), w)
				}
				return
			}
			require.NoError(t, err)
			tc.check(t, c)
		})
	}
}
