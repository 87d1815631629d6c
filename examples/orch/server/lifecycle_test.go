package server_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/examples/orch/schema"
	"github.com/headroom-dev/headroom/examples/orch/server"
)

// TestMissionLifecycle runs the seed's shape in small: one process with
// the API and the worker (ORCH_ROLE=all), two runners (8 slots each) and
// a vendor answering in 50 ms. Ten missions of four tasks, max_parallel 2,
// are created at once and approved at once, with a stream per mission open
// from the start. Every mission must finish done; the vendor records how
// many calls of one mission were in flight together (never more than 2,
// and 2 reached); each stream must carry exactly the mission's events in
// id order, written_at never going back, ending with mission.done; the
// ledger holds one row per attempt; the readers see it all.
func TestMissionLifecycle(t *testing.T) {
	d := fresh(t)
	v := newVendor(t, 50*time.Millisecond)
	srv, base := d.start(t, func(c *server.Config) { c.SweepInterval = time.Hour })
	r1, _ := d.start(t, runner("runner-a", 8, v.srv.URL+"/v1/chat/completions"))
	r2, _ := d.start(t, runner("runner-b", 8, v.srv.URL+"/v1/chat/completions"))

	const missions, tasks, parallel = 10, 4, 2
	in := make([]map[string]any, missions)
	for i := range in {
		in[i] = missionIn(fmt.Sprintf("mission %d", i+1), tasks, parallel, "summarise")
	}
	ms := createBatch(t, base, in...)
	streams := make([]*sse, missions)
	for i, m := range ms {
		assert.Equal(t, schema.MissionDraft, m.Status)
		assert.Len(t, m.Tasks, tasks)
		streams[i] = openStream(t, base, m.ID, 0)
	}
	require.Eventually(t, func() bool { return srv.HeldStreams() == missions }, 5*time.Second, 10*time.Millisecond)
	var ap struct {
		Approved int     `json:"approved"`
		IDs      []int64 `json:"ids"`
	}
	require.Equal(t, http.StatusOK, call(t, "POST", base+"/api/missions/approve", "", map[string]any{"all_drafts": true}, &ap))
	assert.Equal(t, missions, ap.Approved)

	got := make([][]sseEvent, missions)
	for i, st := range streams {
		got[i] = st.untilEnd(t, 30*time.Second)
	}

	// Every mission done, every task done once.
	assert.Equal(t, int64(missions), d.count(t, `SELECT count(*) FROM missions WHERE status = 'done' AND finished_at IS NOT NULL`))
	assert.Equal(t, int64(missions*tasks), d.count(t, `SELECT count(*) FROM tasks WHERE status = 'done' AND attempts = 1`))

	// Never more than max_parallel of a mission at the vendor at once,
	// and the limit was reached (else the check proves nothing).
	calls, most := v.stats()
	assert.Equal(t, missions*tasks, calls)
	reached := 0
	for m, n := range most {
		assert.LessOrEqual(t, n, parallel, "mission %d had %d calls in flight at once", m, n)
		if n == parallel {
			reached++
		}
	}
	assert.Positive(t, reached, "no mission ever ran %d tasks at once: %v", parallel, most)
	// The same from the attempts' own times: the most attempts of one
	// mission overlapping.
	assert.LessOrEqual(t, d.count(t, `SELECT coalesce(max(n), 0) FROM (SELECT a.id, count(*) n FROM attempts a JOIN attempts b
		ON b.mission_id = a.mission_id AND b.started_at <= a.started_at AND b.finished_at > a.started_at GROUP BY a.id) x`), int64(parallel))

	// Each stream: the mission's events exactly, in order, ending done.
	for i, m := range ms {
		rows, err := d.pool.Query(context.Background(), `SELECT id, kind, written_at FROM events WHERE mission_id = $1 ORDER BY id`, m.ID)
		require.NoError(t, err)
		type row struct {
			id      int64
			kind    string
			written time.Time
		}
		want, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
			var x row
			return x, r.Scan(&x.id, &x.kind, &x.written)
		})
		require.NoError(t, err)
		require.Len(t, got[i], len(want), "mission %d", m.ID)
		var prev time.Time
		for j, e := range got[i] {
			ev := e.decode(t)
			assert.Equal(t, want[j].id, e.id)
			assert.Equal(t, want[j].id, ev.ID)
			assert.Equal(t, want[j].kind, e.name)
			assert.Equal(t, m.ID, ev.MissionID)
			w, err := time.Parse(time.RFC3339Nano, ev.WrittenAt)
			require.NoError(t, err, ev.WrittenAt)
			assert.True(t, strings.HasSuffix(ev.WrittenAt, "Z"), ev.WrittenAt)
			assert.True(t, w.Equal(want[j].written), "written_at %s, row %s", w, want[j].written)
			assert.False(t, w.Before(prev), "written_at went back at event %d", ev.ID)
			prev = w
		}
		kinds := make([]string, len(got[i]))
		for j, e := range got[i] {
			kinds[j] = e.name
		}
		assert.Equal(t, schema.EventMissionCreated, kinds[0])
		assert.Equal(t, schema.EventMissionApproved, kinds[1])
		assert.Equal(t, schema.EventMissionDone, kinds[len(kinds)-1])
		for _, k := range []string{schema.EventTaskQueued, schema.EventTaskStarted, schema.EventTaskDone} {
			n := 0
			for _, x := range kinds {
				if x == k {
					n++
				}
			}
			assert.Equal(t, tasks, n, "mission %d: %s events", m.ID, k)
		}
	}

	// The ledger: one row per attempt, the attempts' tokens.
	assert.Equal(t, int64(missions*tasks), d.count(t, `SELECT count(*) FROM attempts WHERE outcome = 'ok'`))
	assert.Equal(t, d.count(t, `SELECT count(*) FROM attempts`), d.count(t, `SELECT count(*) FROM ledger`))
	assert.Equal(t, int64(missions*tasks*100), d.count(t, `SELECT sum(tokens) FROM ledger`))

	// Both runners worked, each claiming several tasks per query at times.
	s1, s2 := r1.RunnerStats(), r2.RunnerStats()
	assert.Equal(t, int64(missions*tasks), s1.Claimed+s2.Claimed)
	assert.Positive(t, s1.Claimed)
	assert.Positive(t, s2.Claimed)
	evTicks, sweep := srv.Ticks()
	assert.Positive(t, evTicks)
	assert.Zero(t, sweep, "the sweep is an hour away: every tick came from an event")
	// Ticks come only from approvals and finished tasks.
	assert.LessOrEqual(t, evTicks, int64(missions+missions*tasks))

	// The readers.
	var sb struct {
		Runners []struct {
			Runner    string  `json:"runner"`
			Attempts  int64   `json:"attempts"`
			Succeeded int64   `json:"succeeded"`
			Success   float64 `json:"success_rate"`
			Avg       float64 `json:"avg_duration_seconds"`
		} `json:"runners"`
	}
	require.Equal(t, http.StatusOK, call(t, "GET", base+"/api/scoreboard", "", nil, &sb))
	require.Len(t, sb.Runners, 2)
	assert.Equal(t, "runner-a", sb.Runners[0].Runner)
	assert.Equal(t, int64(missions*tasks), sb.Runners[0].Attempts+sb.Runners[1].Attempts)
	for _, r := range sb.Runners {
		assert.Equal(t, 1.0, r.Success)
		assert.GreaterOrEqual(t, r.Avg, 0.04)
	}
	var bud struct {
		Month string `json:"month"`
		Total struct {
			Attempts int64   `json:"attempts"`
			Tokens   int64   `json:"tokens"`
			Cost     float64 `json:"cost"`
		} `json:"total"`
		Days        []map[string]any `json:"days"`
		TopMissions []struct {
			MissionID int64   `json:"mission_id"`
			Tokens    int64   `json:"tokens"`
			Cost      float64 `json:"cost"`
		} `json:"top_missions"`
	}
	require.Equal(t, http.StatusOK, call(t, "GET", base+"/api/budgets", "", nil, &bud))
	assert.Equal(t, time.Now().UTC().Format("2006-01"), bud.Month)
	assert.Equal(t, int64(missions*tasks), bud.Total.Attempts)
	assert.Equal(t, int64(missions*tasks*100), bud.Total.Tokens)
	assert.InDelta(t, float64(missions*tasks*100)*0.000002, bud.Total.Cost, 1e-9)
	assert.Len(t, bud.Days, 1)
	assert.Len(t, bud.TopMissions, 10)
	assert.Equal(t, int64(tasks*100), bud.TopMissions[0].Tokens)

	var page struct {
		Mission mission `json:"mission"`
		Tasks   []struct {
			Status string  `json:"status"`
			Result *string `json:"result"`
		} `json:"tasks"`
		Events []event `json:"events"`
		Spend  struct {
			Attempts int64 `json:"attempts"`
			Tokens   int64 `json:"tokens"`
		} `json:"spend"`
	}
	require.Equal(t, http.StatusOK, call(t, "GET", fmt.Sprintf("%s/api/missions/%d", base, ms[0].ID), "", nil, &page))
	assert.Equal(t, schema.MissionDone, page.Mission.Status)
	assert.Equal(t, int64(tasks), page.Mission.TaskCounts["done"])
	require.Len(t, page.Tasks, tasks)
	require.NotNil(t, page.Tasks[0].Result)
	assert.Equal(t, "done: summarise #1", *page.Tasks[0].Result)
	assert.Len(t, page.Events, len(got[0]))
	assert.Equal(t, int64(tasks), page.Spend.Attempts)
	assert.Equal(t, int64(tasks*100), page.Spend.Tokens)
}

// TestVendorFailures: a vendor failing every call of one task makes the
// task fail after ORCH_MAX_ATTEMPTS (3) attempts — two task.retry events,
// then task.failed — and its mission fails; a task failing once is
// retried and its mission finishes done. The inbox lists the failed task.
func TestVendorFailures(t *testing.T) {
	d := fresh(t)
	v := newVendor(t, 10*time.Millisecond)
	v.fail = func(prompt string, attempt int) int {
		switch {
		case strings.HasPrefix(prompt, "broken #2"):
			return http.StatusBadGateway
		case strings.HasPrefix(prompt, "flaky #1") && attempt == 1:
			return http.StatusServiceUnavailable
		}
		return 0
	}
	_, base := d.start(t, func(c *server.Config) { c.SweepInterval = time.Hour })
	d.start(t, runner("r", 4, v.srv.URL))
	ms := createBatch(t, base, missionIn("broken", 2, 1, "broken"), missionIn("flaky", 2, 1, "flaky"))
	broken, flaky := openStream(t, base, ms[0].ID, 0), openStream(t, base, ms[1].ID, 0)
	require.Equal(t, http.StatusOK, call(t, "POST", base+"/api/missions/approve", "", map[string]any{"ids": []int64{ms[0].ID, ms[1].ID}}, nil))

	evs := broken.untilEnd(t, 20*time.Second)
	var kinds []string
	for _, e := range evs {
		if e.name == schema.EventTaskRetry || e.name == schema.EventTaskFailed || strings.HasPrefix(e.name, "mission.") {
			kinds = append(kinds, e.name)
		}
	}
	assert.Equal(t, []string{schema.EventMissionCreated, schema.EventMissionApproved, schema.EventMissionRunning,
		schema.EventTaskRetry, schema.EventTaskRetry, schema.EventTaskFailed, schema.EventMissionFailed}, kinds)
	last := evs[len(evs)-1].decode(t)
	assert.Equal(t, float64(1), last.Data["failed"])
	assert.Equal(t, schema.MissionFailed, statusOf(t, d, ms[0].ID))
	assert.Equal(t, int64(3), d.count(t, `SELECT attempts FROM tasks WHERE mission_id = $1 AND seq = 2`, ms[0].ID))
	assert.Equal(t, int64(3), d.count(t, `SELECT count(*) FROM attempts a JOIN tasks t ON t.id = a.task_id WHERE t.mission_id = $1 AND t.seq = 2 AND a.outcome = 'error' AND a.error LIKE '%502%'`, ms[0].ID))

	fevs := flaky.untilEnd(t, 20*time.Second)
	assert.Equal(t, schema.EventMissionDone, fevs[len(fevs)-1].name)
	assert.Equal(t, int64(2), d.count(t, `SELECT attempts FROM tasks WHERE mission_id = $1 AND seq = 1`, ms[1].ID))
	assert.Equal(t, d.count(t, `SELECT count(*) FROM attempts`), d.count(t, `SELECT count(*) FROM ledger`), "a ledger row per settled attempt")

	var inbox struct {
		FailedTasks []struct {
			MissionID    int64  `json:"mission_id"`
			MissionTitle string `json:"mission_title"`
			Seq          int    `json:"seq"`
			Attempts     int    `json:"attempts"`
			Result       string `json:"result"`
		} `json:"failed_tasks"`
		FailedTaskCount int64 `json:"failed_task_count"`
	}
	require.Equal(t, http.StatusOK, call(t, "GET", base+"/api/inbox", "", nil, &inbox))
	require.Len(t, inbox.FailedTasks, 1)
	assert.Equal(t, int64(1), inbox.FailedTaskCount)
	assert.Equal(t, "broken", inbox.FailedTasks[0].MissionTitle)
	assert.Equal(t, 3, inbox.FailedTasks[0].Attempts)
	assert.Contains(t, inbox.FailedTasks[0].Result, "502")
}

func statusOf(t testing.TB, d *db, id int64) string {
	t.Helper()
	var s string
	require.NoError(t, d.pool.QueryRow(context.Background(), `SELECT status FROM missions WHERE id = $1`, id).Scan(&s))
	return s
}
