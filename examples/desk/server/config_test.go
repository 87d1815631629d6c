package server_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/examples/desk/server"
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
	assert.True(t, c.SharedCounts)
	assert.True(t, c.AccessCache)
	assert.True(t, c.Live)
	assert.False(t, c.Metrics)
	assert.False(t, c.Pooler)

	c, err = server.ConfigFromEnv(env(map[string]string{
		"DATABASE_URL": "postgres://u@127.0.0.1:6432/db", "DESK_LISTEN_URL": "postgres://u@127.0.0.1:5432/db", "DESK_POOLER": "1",
		"DESK_ROLE": "web", "DESK_DB_MAX_CONNS": "7", "DESK_SHARED_COUNTS": "0", "DESK_ACCESS_CACHE": "off", "DESK_LIVE": "0",
		"DESK_METRICS": "1", "DESK_PPROF": "true", "DESK_COUNTS_TTL": "2s", "DESK_PRESENCE_TTL": "90s",
		"DESK_MAIL_URL": "http://localhost:8765/mail", "DESK_ADDR": "127.0.0.1:9000", "DESK_PAGE_SIZE": "50",
	}))
	require.NoError(t, err)
	assert.Equal(t, server.RoleWeb, c.Role)
	assert.True(t, c.Pooler)
	assert.Equal(t, 7, c.DBMaxConns)
	assert.False(t, c.SharedCounts)
	assert.False(t, c.AccessCache)
	assert.False(t, c.Live)
	assert.True(t, c.Metrics)
	assert.True(t, c.Pprof)
	assert.Equal(t, 2*time.Second, c.CountsTTL)
	assert.Equal(t, 90*time.Second, c.PresenceTTL)
	assert.Equal(t, 50, c.PageSize)

	_, err = server.ConfigFromEnv(env(map[string]string{
		"DESK_ROLE":               "both",
		"DESK_DB_MAX_CONNS":       "0",
		"DESK_SHARED_COUNTS":      "yes",
		"DESK_COUNTS_TTL":         "soon",
		"DESK_PAGE_SIZE":          "500",
		"DESK_LISTEN_URL":         "mysql://x",
		"DESK_MAIL_URL":           "http://93.184.215.14/mail",
		"DESK_ADDR":               "8080",
		"DESK_LOG_LEVEL":          "loud",
		"DESK_KEEPALIVE_INTERVAL": "-1s",
	}))
	require.Error(t, err)
	for _, want := range []string{
		"DATABASE_URL is empty", `DESK_ROLE="both"`, `DESK_DB_MAX_CONNS="0"`, `DESK_SHARED_COUNTS="yes"`, `DESK_COUNTS_TTL="soon"`,
		"DESK_PAGE_SIZE=500", "DESK_LISTEN_URL", "DESK_MAIL_URL", "not a loopback address", `DESK_ADDR="8080"`, `DESK_LOG_LEVEL="loud"`,
		`DESK_KEEPALIVE_INTERVAL="-1s"`,
	} {
		assert.ErrorContains(t, err, want)
	}

	// Mail only to loopback, or to private networks when allowed; never public.
	for url, ok := range map[string]bool{
		"http://127.0.0.1:1/m": true, "http://[::1]:1/m": true, "http://localhost/m": true,
		"http://10.1.2.3/m": false, "http://mailpit:8025/m": false, "ftp://127.0.0.1/m": false,
	} {
		_, err := server.ConfigFromEnv(env(map[string]string{"DATABASE_URL": "postgres://x/y", "DESK_MAIL_URL": url}))
		assert.Equal(t, ok, err == nil, "%s: %v", url, err)
	}
	for url, ok := range map[string]bool{"http://10.1.2.3/m": true, "http://mailpit:8025/m": true, "http://8.8.8.8/m": false} {
		_, err := server.ConfigFromEnv(env(map[string]string{"DATABASE_URL": "postgres://x/y", "DESK_MAIL_URL": url, "DESK_MAIL_ALLOW_PRIVATE": "1"}))
		assert.Equal(t, ok, err == nil, "%s (private allowed): %v", url, err)
	}
}
