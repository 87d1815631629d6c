package server_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/examples/relay/server"
)

// TestProbes checks /healthz and /readyz: ready with the schema applied,
// the faults that are on listed, not ready when the schema is behind.
func TestProbes(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		cfg := testConfig(t, dsn)
		cfg.UpstreamMode = server.ModeSync
		cfg.Workers = 7
		cfg.Faults = server.Faults{CallLatency: 5 * time.Millisecond, DashboardNPlusOne: true}
		r := startRelay(t, cfg)

		status, body := r.get(t, "/healthz", "")
		assert.Equal(t, http.StatusOK, status)
		assert.JSONEq(t, `{"status":"ok"}`, string(body))

		status, body = r.get(t, "/readyz", "")
		require.Equal(t, http.StatusOK, status, "%s", body)
		var rd server.Readiness
		require.NoError(t, json.Unmarshal(body, &rd))
		assert.Equal(t, "ready", rd.Status)
		assert.Equal(t, cfg.Dialect(), rd.Database)
		assert.Equal(t, rd.WantSchemaVersion, rd.SchemaVersion)
		assert.GreaterOrEqual(t, rd.SchemaVersion, 1)
		assert.Equal(t, "sync", rd.UpstreamMode)
		assert.Equal(t, 7, rd.Workers)
		assert.Equal(t, []string{"call-latency:5ms", "dashboard-n-plus-one"}, rd.Faults)

		_, err := r.DB.Exec(`DELETE FROM schema_version`)
		require.NoError(t, err)
		status, body = r.get(t, "/readyz", "")
		assert.Equal(t, http.StatusServiceUnavailable, status)
		require.NoError(t, json.Unmarshal(body, &rd))
		assert.Equal(t, "not ready", rd.Status)
		assert.Contains(t, rd.Error, "migrations")
	})
}

// TestMigrationsIdempotent checks that a second relay on a migrated
// database starts and finds the schema ready.
func TestMigrationsIdempotent(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		first := startRelay(t, testConfig(t, dsn))
		second := startRelay(t, testConfig(t, dsn))
		for _, r := range []*relay{first, second} {
			status, body := r.get(t, "/readyz", "")
			assert.Equal(t, http.StatusOK, status, "%s", body)
		}
		var n int
		require.NoError(t, first.DB.QueryRow(`SELECT COUNT(*) FROM schema_version`).Scan(&n))
		assert.Equal(t, len(schemaVersions(cfgDialect(dsn))), n, "each migration recorded once")
	})
}
