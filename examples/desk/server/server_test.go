package server_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/examples/desk/server"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestDrain checks Shutdown: a held stream gets "event: shutdown" and
// ends, /readyz is 503 while draining, new connections are refused, and
// the drain does not wait for the stream.
func TestDrain(t *testing.T) {
	d := seeded(t)
	srv, base := d.start(t, nil)
	code, body := get(t, base+"/readyz")
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, `"schema_version":1`)
	st := d.openStream(t, base, 1)
	st.next(t, "hello", 5*time.Second)

	start := time.Now()
	rep, err := srv.Shutdown(context.Background())
	require.NoError(t, err)
	assert.Less(t, time.Since(start), 5*time.Second)
	assert.Equal(t, int64(1), rep.Streams)
	assert.False(t, rep.TimedOut)
	st.next(t, "shutdown", 5*time.Second)
	_, err = http.Get(base + "/healthz")
	assert.Error(t, err, "the listener is closed")
}

// TestReadyzDuringDrain checks that /readyz turns 503 as soon as a drain
// starts, while requests in flight may still be answered.
func TestReadyzDuringDrain(t *testing.T) {
	d := seeded(t)
	srv, _ := d.start(t, nil)
	h := srv.Handler()
	go srv.Shutdown(context.Background())
	require.Eventually(t, func() bool {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
		return rec.Code == http.StatusServiceUnavailable && strings.Contains(rec.Body.String(), "draining")
	}, 5*time.Second, 5*time.Millisecond)
}

// TestMetricsAndPprof checks /metrics (requests by route and code,
// latency, held streams, the pool, the shared counts and access cache,
// Go runtime) and pprof with the knobs on, and 404s with them off.
func TestMetricsAndPprof(t *testing.T) {
	d := seeded(t)
	_, off := d.start(t, nil)
	code, _ := get(t, off+"/metrics")
	assert.Equal(t, http.StatusNotFound, code)
	code, _ = get(t, off+"/debug/pprof/")
	assert.Equal(t, http.StatusNotFound, code)

	_, on := d.start(t, func(c *server.Config) { c.Metrics, c.Pprof = true, true })
	for range 3 {
		require.Equal(t, http.StatusOK, d.call(t, "GET", on+"/api/inbox?view=open", 1, nil, nil))
	}
	d.openStream(t, on, 1).next(t, "hello", 5*time.Second)
	code, body := get(t, on+"/metrics")
	require.Equal(t, http.StatusOK, code)
	for _, want := range []string{
		`desk_http_requests_total{code="200",route="inbox"} 3`,
		`desk_http_request_duration_seconds_bucket{route="inbox"`,
		`desk_held_streams 1`,
		`desk_db_connections{state="in_use"}`,
		`desk_db_max_connections 20`,
		`desk_counts_computations_total{mode="shared"} 1`,
		`desk_access_lookups_total{result="hit"}`,
		`desk_access_lookups_total{result="miss"} 1`,
		`desk_listening 1`,
		`go_goroutines`,
	} {
		assert.Contains(t, body, want)
	}
	code, _ = get(t, on+"/debug/pprof/")
	assert.Equal(t, http.StatusOK, code)
}
