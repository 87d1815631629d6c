package server_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/examples/orch/schema"
	"github.com/headroom-dev/headroom/examples/orch/server"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestDrainWeb: a held stream gets "event: shutdown" and ends, the drain
// does not wait for it, /readyz is 503 while draining, and the listener
// is closed after.
func TestDrainWeb(t *testing.T) {
	d := fresh(t)
	srv, base := d.start(t, nil)
	code, body := get(t, base+"/readyz")
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, `"schema_version":1`)
	m := createBatch(t, base, missionIn("drain", 1, 1, "p"))[0]
	st := openStream(t, base, m.ID, 0)
	st.next(t, schema.EventMissionCreated, 5*time.Second)

	h := srv.Handler()
	start := time.Now()
	done := make(chan server.DrainReport, 1)
	go func() { rep, _ := srv.Shutdown(context.Background()); done <- rep }()
	require.Eventually(t, func() bool {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
		return rec.Code == http.StatusServiceUnavailable && strings.Contains(rec.Body.String(), "draining")
	}, 5*time.Second, 5*time.Millisecond)
	st.next(t, "shutdown", 5*time.Second)
	rep := <-done
	assert.Less(t, time.Since(start), 5*time.Second)
	assert.Equal(t, int64(1), rep.Streams)
	assert.False(t, rep.TimedOut)
	_, err := http.Get(base + "/healthz")
	assert.Error(t, err, "the listener is closed")
}

// TestDrainRunner: a draining runner stops claiming and lets an attempt
// that finishes within ORCH_DRAIN_TIMEOUT settle done; an attempt still
// running at the timeout is cut off and its task goes back to the queue
// (attempt abandoned, attempts not counted, task.requeued), and another
// runner then finishes it.
func TestDrainRunner(t *testing.T) {
	d := fresh(t)
	v := newVendor(t, 300*time.Millisecond)
	queueTasks(t, d, 1)
	r, _ := d.start(t, func(c *server.Config) { runner("finisher", 4, v.srv.URL)(c); c.DrainTimeout = 5 * time.Second })
	require.Eventually(t, func() bool { return r.RunnerStats().Running == 1 }, 5*time.Second, 5*time.Millisecond)
	queueTasks(t, d, 1) // queued during the drain: not claimed by the draining runner
	rep, err := r.Shutdown(context.Background())
	require.NoError(t, err)
	assert.False(t, rep.TimedOut)
	assert.Zero(t, rep.Requeued)
	assert.Equal(t, int64(1), d.count(t, `SELECT count(*) FROM tasks WHERE status = 'done' AND runner = 'finisher'`))
	assert.Equal(t, int64(1), d.count(t, `SELECT count(*) FROM tasks WHERE status = 'queued'`))

	// A vendor that hangs: the drain timeout gives the task back.
	hang := newVendor(t, 0)
	hang.gate = make(chan struct{})
	q, _ := d.start(t, func(c *server.Config) { runner("quitter", 4, hang.srv.URL)(c); c.DrainTimeout = 200 * time.Millisecond })
	require.Eventually(t, func() bool { return q.RunnerStats().Running == 1 }, 5*time.Second, 5*time.Millisecond)
	start := time.Now()
	rep, err = q.Shutdown(context.Background())
	require.NoError(t, err)
	assert.Less(t, time.Since(start), 3*time.Second)
	assert.True(t, rep.TimedOut)
	assert.Equal(t, int64(1), rep.Requeued)
	assert.Equal(t, int64(1), d.count(t, `SELECT count(*) FROM tasks WHERE status = 'queued' AND attempts = 0 AND runner IS NULL`))
	assert.Equal(t, int64(1), d.count(t, `SELECT count(*) FROM attempts WHERE outcome = 'abandoned' AND runner = 'quitter'`))
	assert.Equal(t, int64(1), d.count(t, `SELECT count(*) FROM events WHERE kind = 'task.requeued'`))
	assert.Zero(t, d.count(t, `SELECT count(*) FROM ledger WHERE runner = 'quitter'`), "an abandoned attempt is not settled")

	d.start(t, runner("heir", 4, v.srv.URL))
	require.Eventually(t, func() bool {
		return d.count(t, `SELECT count(*) FROM tasks WHERE status = 'done' AND runner = 'heir' AND attempts = 1`) == 1
	}, 5*time.Second, 10*time.Millisecond)
}

// TestMetricsAndPprof checks /metrics and pprof with the knobs on (a web
// with a worker, and a runner), and 404s with them off.
func TestMetricsAndPprof(t *testing.T) {
	d := fresh(t)
	_, off := d.start(t, role(server.RoleWeb))
	code, _ := get(t, off+"/metrics")
	assert.Equal(t, http.StatusNotFound, code)
	code, _ = get(t, off+"/debug/pprof/")
	assert.Equal(t, http.StatusNotFound, code)

	v := newVendor(t, 10*time.Millisecond)
	_, on := d.start(t, func(c *server.Config) { c.Metrics, c.Pprof, c.DBMaxConns = true, true, 9 })
	_, run := d.start(t, func(c *server.Config) { runner("m", 5, v.srv.URL)(c); c.Metrics = true })
	m := createBatch(t, on, missionIn("metrics", 2, 2, "p"))[0]
	st := openStream(t, on, m.ID, 0)
	st.next(t, schema.EventMissionCreated, 5*time.Second)
	for range 3 {
		require.Equal(t, http.StatusOK, call(t, "GET", on+"/api/inbox", "", nil, nil))
	}
	code, body := get(t, on+"/metrics")
	require.Equal(t, http.StatusOK, code)
	for _, want := range []string{
		`orch_http_requests_total{code="200",route="inbox"} 3`,
		`orch_http_requests_total{code="201",route="create_batch"} 1`,
		`orch_http_request_duration_seconds_bucket{route="inbox"`,
		`orch_held_streams 1`,
		`orch_events_total{kind="mission.created"} 1`,
		`orch_db_connections{state="in_use"}`,
		`orch_db_connections{state="idle"}`,
		`orch_db_max_connections 9`,
		`orch_listening 1`,
		`orch_runner_free_slots 0`,
		`go_goroutines`,
		`process_cpu_seconds_total`,
	} {
		assert.Contains(t, body, want)
	}
	require.Equal(t, http.StatusOK, call(t, "POST", on+"/api/missions/approve", "", map[string]any{"all_drafts": true}, nil))
	st.untilEnd(t, 10*time.Second)
	_, body = get(t, on+"/metrics")
	assert.Contains(t, body, `orch_ticks_total{reason="event"}`)
	assert.Contains(t, body, `orch_events_total{kind="mission.done"} 1`)
	// The runner settles a task (done, in the database), then counts its
	// attempt finished and frees its slot: a read between the two (seen on
	// a busy host) finds it still running. Its metrics are read until they
	// show all of it, or for 10 s.
	wants := []string{
		`orch_attempts_total{outcome="ok"} 2`,
		`orch_attempts_running 0`,
		`orch_runner_free_slots 5`,
		`orch_events_total{kind="task.done"} 2`,
		`orch_claims_total`,
		`orch_notifications_total{channel="orch_queue"}`,
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		_, body = get(t, run+"/metrics")
		if !slices.ContainsFunc(wants, func(w string) bool { return !strings.Contains(body, w) }) || time.Now().After(deadline) {
			break
		}
	}
	for _, want := range wants {
		assert.Contains(t, body, want)
	}
	code, _ = get(t, on+"/debug/pprof/")
	assert.Equal(t, http.StatusOK, code)
}
