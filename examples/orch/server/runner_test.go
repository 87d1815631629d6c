package server_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/examples/orch/server"
)

// queueTasks writes a running mission with n queued tasks straight into
// the database (no worker needed) and returns its id.
func queueTasks(t testing.TB, d *db, n int) int64 {
	t.Helper()
	ctx := context.Background()
	var id int64
	require.NoError(t, d.pool.QueryRow(ctx, `INSERT INTO missions (title, status, max_parallel, approved_at) VALUES ('queued', 'running', 64, now()) RETURNING id`).Scan(&id))
	_, err := d.pool.Exec(ctx, `INSERT INTO tasks (mission_id, seq, title, prompt, status, queued_at)
		SELECT $1, g, 'task ' || g, 'prompt #' || g, 'queued', clock_timestamp() FROM generate_series(1, $2) g`, id, n)
	require.NoError(t, err)
	return id
}

// TestClaimTakesFreeSlotsInOneQuery: a runner with 4 slots starting on 10
// queued tasks takes 4 of them with its first claim query (the vendor
// holds them), and claims nothing more until a slot frees; released, it
// finishes all 10 with a handful of claims.
func TestClaimTakesFreeSlotsInOneQuery(t *testing.T) {
	d := fresh(t)
	v := newVendor(t, 0)
	gate := make(chan struct{})
	v.gate = gate
	queueTasks(t, d, 10)
	r, _ := d.start(t, func(c *server.Config) {
		runner("slots", 4, v.srv.URL)(c)
		c.ClaimInterval = 50 * time.Millisecond
	})
	require.Eventually(t, func() bool { calls, _ := v.stats(); return calls == 4 }, 5*time.Second, 5*time.Millisecond)
	st := r.RunnerStats()
	assert.Equal(t, int64(1), st.Claims, "one claim query took the four free slots")
	assert.Equal(t, int64(4), st.Claimed)
	assert.Equal(t, int64(4), st.Running)
	assert.Equal(t, int64(4), d.count(t, `SELECT count(*) FROM tasks WHERE status = 'running' AND runner = 'slots'`))
	assert.Equal(t, int64(4), d.count(t, `SELECT count(*) FROM attempts WHERE outcome = 'running'`))
	// All slots busy: 300 ms of claim intervals run no claim query.
	time.Sleep(300 * time.Millisecond)
	assert.Equal(t, int64(1), r.RunnerStats().Claims, "a runner with no free slot does not query")
	calls, _ := v.stats()
	assert.Equal(t, 4, calls)

	released := time.Now()
	close(gate)
	require.Eventually(t, func() bool {
		return d.count(t, `SELECT count(*) FROM tasks WHERE status = 'done'`) == 10
	}, 10*time.Second, 10*time.Millisecond)
	st = r.RunnerStats()
	assert.Equal(t, int64(10), st.Claimed)
	// After the release a claim query runs for each freed slot while there
	// is a backlog, and once per interval while a slot is free: on a slow
	// machine the ten tasks take more intervals to finish, so the bound
	// counts them. A runner polling per slot runs four per interval.
	intervals := int64(time.Since(released)/(50*time.Millisecond)) + 1
	assert.LessOrEqual(t, st.Claims-1, 10+intervals, "about one claim per freed slot and one per interval, not one per slot per interval (%d intervals)", intervals)
}

// TestSettlingOutlastsTheDatabase: four attempts end while their
// settling cannot commit (the ledger table renamed away, as a database
// restarted or cut off would fail it); the runner retries, and once the
// table is back every task is done — none is left running, none is
// booked twice.
func TestSettlingOutlastsTheDatabase(t *testing.T) {
	d := fresh(t)
	v := newVendor(t, 0)
	gate := make(chan struct{})
	v.gate = gate
	queueTasks(t, d, 4)
	d.start(t, runner("settler", 4, v.srv.URL))
	require.Eventually(t, func() bool { calls, _ := v.stats(); return calls == 4 }, 5*time.Second, 5*time.Millisecond)
	ctx := context.Background()
	_, err := d.pool.Exec(ctx, `ALTER TABLE ledger RENAME TO ledger_away`)
	require.NoError(t, err)
	close(gate)
	time.Sleep(1500 * time.Millisecond) // the settling fails, a few times each
	assert.Equal(t, int64(4), d.count(t, `SELECT count(*) FROM tasks WHERE status = 'running'`), "nothing could settle")
	_, err = d.pool.Exec(ctx, `ALTER TABLE ledger_away RENAME TO ledger`)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		return d.count(t, `SELECT count(*) FROM tasks WHERE status = 'done'`) == 4
	}, 10*time.Second, 20*time.Millisecond, "the runner settles once the database takes it")
	assert.Equal(t, int64(4), d.count(t, `SELECT count(*) FROM ledger`), "each attempt booked once")
	assert.Equal(t, int64(4), d.count(t, `SELECT count(*) FROM attempts WHERE outcome = 'ok'`))
}

// TestIdleRunnersPollOncePerInterval is the seed's first cause, checked:
// an idle runner with 64 slots and a 50 ms claim interval runs about one
// claim query per interval (not one per slot), and a NOTIFY on the queue
// channel wakes it at once even with an hour's interval.
func TestIdleRunnersPollOncePerInterval(t *testing.T) {
	d := fresh(t)
	v := newVendor(t, 0)
	r, _ := d.start(t, func(c *server.Config) {
		runner("idle", 64, v.srv.URL)(c)
		c.ClaimInterval = 50 * time.Millisecond
	})
	start := r.RunnerStats().Claims
	time.Sleep(time.Second)
	n := r.RunnerStats().Claims - start
	assert.GreaterOrEqual(t, n, int64(10), "the interval polls")
	assert.LessOrEqual(t, n, int64(25), "one claim query per interval, not per slot (64 slots would make ~1280)")

	sleepy, _ := d.start(t, func(c *server.Config) {
		runner("sleepy", 64, v.srv.URL)(c)
		c.ClaimInterval = time.Hour
	})
	require.Eventually(t, func() bool { return sleepy.RunnerStats().Claims >= 1 }, 5*time.Second, 5*time.Millisecond) // the first pass
	time.Sleep(100 * time.Millisecond)
	before := sleepy.RunnerStats().Claims
	r.Close() // only sleepy runs now
	queueTasks(t, d, 3)
	_, err := d.pool.Exec(context.Background(), `SELECT pg_notify('orch_queue', '3')`)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return sleepy.RunnerStats().Claimed == 3 }, 5*time.Second, 5*time.Millisecond)
	assert.LessOrEqual(t, sleepy.RunnerStats().Claims-before, int64(2), "woken by the NOTIFY, it claimed all three at once")
}

// TestRoles: a worker and a runner serve no API (404) but health,
// readiness (naming the role, with the runner's knobs) and metrics; each
// role's connections carry its application_name; a web process does not
// orchestrate and a worker does not run attempts.
func TestRoles(t *testing.T) {
	d := fresh(t)
	v := newVendor(t, 0)
	_, web := d.start(t, func(c *server.Config) { c.Role, c.Metrics = server.RoleWeb, true })
	_, worker := d.start(t, func(c *server.Config) { c.Role, c.Metrics, c.SweepInterval = server.RoleWorker, true, time.Hour })
	for _, base := range []string{worker} {
		assert.Equal(t, http.StatusNotFound, call(t, "GET", base+"/api/missions", "", nil, nil))
		assert.Equal(t, http.StatusNotFound, call(t, "POST", base+"/api/missions", "", missionIn("x", 1, 1, "p"), nil))
		assert.Equal(t, http.StatusOK, call(t, "GET", base+"/healthz", "", nil, nil))
		assert.Equal(t, http.StatusOK, call(t, "GET", base+"/metrics", "", nil, nil))
	}
	var ready map[string]any
	require.Equal(t, http.StatusOK, call(t, "GET", worker+"/readyz", "", nil, &ready))
	assert.Equal(t, "worker", ready["role"])
	assert.Equal(t, "orch-worker", ready["application_name"])
	assert.Nil(t, ready["runner_slots"])

	// Web and worker alone: the mission is queued (by the worker) but
	// nobody runs it.
	m := createBatch(t, web, missionIn("roles", 3, 2, "p"))[0]
	require.Equal(t, http.StatusOK, call(t, "POST", fmt.Sprintf("%s/api/missions/%d/approve", web, m.ID), "", nil, nil))
	require.Eventually(t, func() bool {
		return d.count(t, `SELECT count(*) FROM tasks WHERE status = 'queued'`) == 2
	}, 5*time.Second, 10*time.Millisecond)
	time.Sleep(200 * time.Millisecond)
	assert.Zero(t, d.count(t, `SELECT count(*) FROM attempts`), "neither web nor worker runs attempts")

	rs, run := d.start(t, func(c *server.Config) {
		runner("the-runner", 7, v.srv.URL)(c)
		c.Metrics = true
	})
	assert.Equal(t, http.StatusNotFound, call(t, "GET", run+"/api/inbox", "", nil, nil))
	require.Equal(t, http.StatusOK, call(t, "GET", run+"/readyz", "", nil, &ready))
	assert.Equal(t, "runner", ready["role"])
	assert.Equal(t, "the-runner", ready["runner_name"])
	assert.Equal(t, float64(7), ready["runner_slots"])
	assert.Equal(t, []any{"orch_queue"}, ready["listen_channels"])
	require.Eventually(t, func() bool {
		return d.count(t, `SELECT count(*) FROM missions WHERE status = 'done'`) == 1
	}, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, int64(3), rs.RunnerStats().Claimed)

	// Connections by application.
	apps := map[string]int64{}
	rows, err := d.pool.Query(context.Background(), `SELECT application_name, count(*) FROM pg_stat_activity WHERE datname = current_database() GROUP BY 1`)
	require.NoError(t, err)
	for rows.Next() {
		var a string
		var n int64
		require.NoError(t, rows.Scan(&a, &n))
		apps[a] = n
	}
	require.NoError(t, rows.Err())
	for _, a := range []string{"orch-web", "orch-worker", "orch-runner", "orch-web-listen", "orch-worker-listen", "orch-runner-listen"} {
		assert.Positive(t, apps[a], "no connection named %s: %v", a, apps)
	}
	assert.Equal(t, int64(1), apps["orch-web-listen"], "one LISTEN connection per process")
}
