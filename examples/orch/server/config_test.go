package server_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/examples/orch/server"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// TestConfigFromEnv checks the defaults, that each variable is read, and
// that every bad value is reported at once, naming its variable.
func TestConfigFromEnv(t *testing.T) {
	c, err := server.ConfigFromEnv(env(map[string]string{"DATABASE_URL": "postgres://u@127.0.0.1/db"}))
	require.NoError(t, err)
	assert.Equal(t, ":8080", c.Addr)
	assert.Equal(t, server.RoleAll, c.Role)
	assert.Equal(t, 20, c.DBMaxConns)
	assert.Equal(t, 64, c.RunnerSlots)
	assert.Equal(t, time.Second, c.ClaimInterval)
	assert.Equal(t, 5*time.Second, c.SweepInterval)
	assert.Equal(t, 60*time.Second, c.VendorTimeout)
	assert.Equal(t, 3, c.MaxAttempts)
	assert.Equal(t, 15*time.Second, c.KeepaliveInterval)
	assert.Equal(t, 30*time.Second, c.DrainTimeout)
	assert.Empty(t, c.Token)
	assert.False(t, c.Metrics)
	assert.NotEmpty(t, c.RunnerName)

	c, err = server.ConfigFromEnv(env(map[string]string{
		"DATABASE_URL": "postgres://u@127.0.0.1:6432/db", "ORCH_LISTEN_URL": "postgres://u@127.0.0.1:5432/db", "ORCH_POOLER": "1",
		"ORCH_ROLE": "runner", "ORCH_DB_MAX_CONNS": "14", "ORCH_APPLICATION_NAME": "orch-runner-3", "ORCH_TOKEN": "t",
		"ORCH_RUNNER_NAME": "r3", "ORCH_RUNNER_SLOTS": "32", "ORCH_CLAIM_INTERVAL": "250ms", "ORCH_SWEEP_INTERVAL": "2s",
		"ORCH_VENDOR_URL": "http://127.0.0.1:8765/echo?delay=12s", "ORCH_VENDOR_TOKEN": "vt", "ORCH_VENDOR_TIMEOUT": "20s",
		"ORCH_MAX_ATTEMPTS": "5", "ORCH_KEEPALIVE_INTERVAL": "5s", "ORCH_DRAIN_TIMEOUT": "0s", "ORCH_METRICS": "1",
		"ORCH_PPROF": "true", "ORCH_ADDR": "127.0.0.1:9000", "ORCH_LOG_LEVEL": "debug",
	}))
	require.NoError(t, err)
	assert.Equal(t, server.RoleRunner, c.Role)
	assert.True(t, c.Pooler)
	assert.Equal(t, 14, c.DBMaxConns)
	assert.Equal(t, "orch-runner-3", c.ApplicationName)
	assert.Equal(t, "t", c.Token)
	assert.Equal(t, "r3", c.RunnerName)
	assert.Equal(t, 32, c.RunnerSlots)
	assert.Equal(t, 250*time.Millisecond, c.ClaimInterval)
	assert.Equal(t, 2*time.Second, c.SweepInterval)
	assert.Equal(t, "vt", c.VendorToken)
	assert.Equal(t, 20*time.Second, c.VendorTimeout)
	assert.Equal(t, 5, c.MaxAttempts)
	assert.Zero(t, c.DrainTimeout)
	assert.True(t, c.Metrics)
	assert.True(t, c.Pprof)

	_, err = server.ConfigFromEnv(env(map[string]string{
		"ORCH_ROLE":               "both",
		"ORCH_DB_MAX_CONNS":       "0",
		"ORCH_RUNNER_SLOTS":       "many",
		"ORCH_CLAIM_INTERVAL":     "soon",
		"ORCH_SWEEP_INTERVAL":     "-5s",
		"ORCH_MAX_ATTEMPTS":       "500",
		"ORCH_LISTEN_URL":         "mysql://x",
		"ORCH_VENDOR_URL":         "http://93.184.215.14/v1",
		"ORCH_ADDR":               "8080",
		"ORCH_LOG_LEVEL":          "loud",
		"ORCH_METRICS":            "yes",
		"ORCH_DRAIN_TIMEOUT":      "-1s",
		"ORCH_KEEPALIVE_INTERVAL": "0",
	}))
	require.Error(t, err)
	for _, want := range []string{
		"DATABASE_URL is empty", `ORCH_ROLE="both"`, `ORCH_DB_MAX_CONNS="0"`, `ORCH_RUNNER_SLOTS="many"`, `ORCH_CLAIM_INTERVAL="soon"`,
		`ORCH_SWEEP_INTERVAL="-5s"`, "ORCH_MAX_ATTEMPTS=500", "ORCH_LISTEN_URL", "ORCH_VENDOR_URL", "not a loopback address",
		`ORCH_ADDR="8080"`, `ORCH_LOG_LEVEL="loud"`, `ORCH_METRICS="yes"`, `ORCH_DRAIN_TIMEOUT="-1s"`, `ORCH_KEEPALIVE_INTERVAL="0"`,
	} {
		assert.ErrorContains(t, err, want)
	}

	// The vendor only at loopback, or at private networks when allowed; never public.
	for url, ok := range map[string]bool{
		"http://127.0.0.1:1/v": true, "http://[::1]:1/v": true, "http://localhost/v": true,
		"http://10.1.2.3/v": false, "http://mock:8765/v": false, "ftp://127.0.0.1/v": false,
	} {
		_, err := server.ConfigFromEnv(env(map[string]string{"DATABASE_URL": "postgres://x/y", "ORCH_VENDOR_URL": url}))
		assert.Equal(t, ok, err == nil, "%s: %v", url, err)
	}
	for url, ok := range map[string]bool{"http://10.1.2.3/v": true, "http://mock:8765/v": true, "http://8.8.8.8/v": false} {
		_, err := server.ConfigFromEnv(env(map[string]string{"DATABASE_URL": "postgres://x/y", "ORCH_VENDOR_URL": url, "ORCH_VENDOR_ALLOW_PRIVATE": "1"}))
		assert.Equal(t, ok, err == nil, "%s (private allowed): %v", url, err)
	}
}
