package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/examples/orch/schema"
	"github.com/headroom-dev/headroom/examples/orch/server"
)

// TestAPI exercises every API endpoint on a web process (no worker, so
// approved missions stay approved): creating one mission and a batch, bad
// input, approving one (then 409, 404) and in bulk by ids and all drafts,
// the list (status filter, pages, counts), the mission page, the inbox,
// the scoreboard and budgets when empty.
func TestAPI(t *testing.T) {
	d := fresh(t)
	_, base := d.start(t, role(server.RoleWeb))

	var one mission
	require.Equal(t, http.StatusCreated, call(t, "POST", base+"/api/missions", "", map[string]any{
		"title": "launch", "tasks": []map[string]string{{"title": "draft copy", "prompt": "write"}, {"prompt": "review"}},
	}, &one))
	assert.Equal(t, schema.MissionDraft, one.Status)
	assert.Equal(t, 4, one.MaxParallel, "the default max_parallel")
	require.Len(t, one.Tasks, 2)
	assert.Equal(t, "draft copy", one.Tasks[0].Title)
	assert.Equal(t, "task 2", one.Tasks[1].Title, "a task without a title is named by its place")
	assert.Equal(t, 1, one.Tasks[0].Seq)
	assert.Equal(t, int64(2), one.TaskCounts["pending"])

	for name, body := range map[string]any{
		"no title":       map[string]any{"tasks": []map[string]string{{"prompt": "x"}}},
		"no tasks":       map[string]any{"title": "x"},
		"empty prompt":   map[string]any{"title": "x", "tasks": []map[string]string{{"prompt": " "}}},
		"max_parallel":   map[string]any{"title": "x", "max_parallel": 65, "tasks": []map[string]string{{"prompt": "x"}}},
		"not an object":  []int{1},
		"too many tasks": missionIn("x", 101, 1, "p"),
	} {
		assert.Equal(t, http.StatusBadRequest, call(t, "POST", base+"/api/missions", "", body, nil), name)
	}
	assert.Equal(t, http.StatusBadRequest, call(t, "POST", base+"/api/missions/batch", "", map[string]any{"missions": []any{}}, nil))
	assert.Equal(t, http.StatusBadRequest, call(t, "POST", base+"/api/missions/batch", "", map[string]any{"missions": []any{missionIn("ok", 1, 1, "p"), map[string]any{"title": "bad"}}}, nil))
	assert.Equal(t, int64(1), d.count(t, `SELECT count(*) FROM missions`), "a bad batch writes nothing")

	batch := make([]map[string]any, 30)
	for i := range batch {
		batch[i] = missionIn(fmt.Sprintf("batch %02d", i+1), 3, 2, "p")
	}
	ms := createBatch(t, base, batch...)
	assert.Equal(t, "batch 01", ms[0].Title)
	assert.Equal(t, 2, ms[0].MaxParallel)
	assert.Equal(t, int64(31), d.count(t, `SELECT count(*) FROM events WHERE kind = 'mission.created'`))

	// Approve one; again is 409; none such is 404; a bad id is 400.
	url := fmt.Sprintf("%s/api/missions/%d/approve", base, one.ID)
	require.Equal(t, http.StatusOK, call(t, "POST", url, "", nil, nil))
	assert.Equal(t, http.StatusConflict, call(t, "POST", url, "", nil, nil))
	assert.Equal(t, http.StatusNotFound, call(t, "POST", base+"/api/missions/999999/approve", "", nil, nil))
	assert.Equal(t, http.StatusBadRequest, call(t, "POST", base+"/api/missions/x/approve", "", nil, nil))

	// Approve by ids (the already approved one is skipped), then every draft.
	var ap struct {
		Approved int     `json:"approved"`
		IDs      []int64 `json:"ids"`
	}
	require.Equal(t, http.StatusOK, call(t, "POST", base+"/api/missions/approve", "", map[string]any{"ids": []int64{one.ID, ms[0].ID, ms[1].ID}}, &ap))
	assert.Equal(t, 2, ap.Approved)
	assert.Equal(t, []int64{ms[0].ID, ms[1].ID}, ap.IDs)
	assert.Equal(t, http.StatusBadRequest, call(t, "POST", base+"/api/missions/approve", "", map[string]any{}, nil))

	// The inbox before approving the rest: 28 drafts, no failures.
	var inbox struct {
		AwaitingApproval []struct {
			ID    int64  `json:"id"`
			Title string `json:"title"`
		} `json:"awaiting_approval"`
		AwaitingApprovalCount int64 `json:"awaiting_approval_count"`
		FailedTasks           []any `json:"failed_tasks"`
		FailedTaskCount       int64 `json:"failed_task_count"`
	}
	require.Equal(t, http.StatusOK, call(t, "GET", base+"/api/inbox", "", nil, &inbox))
	assert.Equal(t, int64(28), inbox.AwaitingApprovalCount)
	assert.Len(t, inbox.AwaitingApproval, 28)
	assert.Equal(t, "batch 30", inbox.AwaitingApproval[0].Title, "newest first")
	assert.Empty(t, inbox.FailedTasks)

	// The list: pages of 25, newest first, filtered by status.
	var list struct {
		Total    int64     `json:"total"`
		PerPage  int       `json:"per_page"`
		Missions []mission `json:"missions"`
	}
	require.Equal(t, http.StatusOK, call(t, "GET", base+"/api/missions?status=draft", "", nil, &list))
	assert.Equal(t, int64(28), list.Total)
	assert.Len(t, list.Missions, 25)
	require.Equal(t, http.StatusOK, call(t, "GET", base+"/api/missions?status=draft&page=2", "", nil, &list))
	assert.Len(t, list.Missions, 3)
	require.Equal(t, http.StatusOK, call(t, "GET", base+"/api/missions?status=approved", "", nil, &list))
	assert.Equal(t, int64(3), list.Total)
	assert.Equal(t, ms[1].ID, list.Missions[0].ID)
	assert.Equal(t, int64(3), list.Missions[0].TaskCounts["pending"])
	assert.Equal(t, http.StatusBadRequest, call(t, "GET", base+"/api/missions?status=nope", "", nil, nil))
	assert.Equal(t, http.StatusBadRequest, call(t, "GET", base+"/api/missions?page=0", "", nil, nil))

	require.Equal(t, http.StatusOK, call(t, "POST", base+"/api/missions/approve", "", map[string]any{"all_drafts": true}, &ap))
	assert.Equal(t, 28, ap.Approved)
	require.Equal(t, http.StatusOK, call(t, "GET", base+"/api/missions", "", nil, &list))
	assert.Equal(t, int64(31), list.Total)
	assert.Equal(t, ms[29].ID, list.Missions[0].ID)
	assert.Equal(t, int64(31), d.count(t, `SELECT count(*) FROM events WHERE kind = 'mission.approved'`), "one mission.approved (and NOTIFY) each")

	// The mission page.
	var page struct {
		Mission mission  `json:"mission"`
		Tasks   []any    `json:"tasks"`
		Events  []event  `json:"events"`
		Spend   struct{} `json:"spend"`
	}
	require.Equal(t, http.StatusOK, call(t, "GET", fmt.Sprintf("%s/api/missions/%d", base, one.ID), "", nil, &page))
	assert.Equal(t, schema.MissionApproved, page.Mission.Status)
	assert.Len(t, page.Tasks, 2)
	require.Len(t, page.Events, 2)
	assert.Equal(t, schema.EventMissionCreated, page.Events[0].Kind)
	assert.Equal(t, schema.EventMissionApproved, page.Events[1].Kind)
	assert.Equal(t, http.StatusNotFound, call(t, "GET", base+"/api/missions/999999", "", nil, nil))
	assert.Equal(t, http.StatusNotFound, call(t, "GET", base+"/api/missions/999999/events", "", nil, nil))

	// Scoreboard and budgets with nothing run yet.
	var sb struct {
		Runners []any `json:"runners"`
	}
	require.Equal(t, http.StatusOK, call(t, "GET", base+"/api/scoreboard", "", nil, &sb))
	assert.Empty(t, sb.Runners)
	var bud struct {
		Total struct {
			Attempts int64 `json:"attempts"`
		} `json:"total"`
		Days []any `json:"days"`
	}
	require.Equal(t, http.StatusOK, call(t, "GET", base+"/api/budgets", "", nil, &bud))
	assert.Zero(t, bud.Total.Attempts)
	assert.Empty(t, bud.Days)

	// A web process does not orchestrate: nothing was queued.
	time.Sleep(300 * time.Millisecond)
	assert.Zero(t, d.count(t, `SELECT count(*) FROM tasks WHERE status <> 'pending'`))
}

// TestAuth: with ORCH_TOKEN every /api/ route wants the bearer token (401
// and WWW-Authenticate without it, or with another); health is open.
func TestAuth(t *testing.T) {
	d := fresh(t)
	_, base := d.start(t, func(c *server.Config) { c.Token = "s3cret" })
	for _, path := range []string{"/api/missions", "/api/inbox", "/api/scoreboard", "/api/budgets", "/api/missions/1", "/api/missions/1/events"} {
		assert.Equal(t, http.StatusUnauthorized, call(t, "GET", base+path, "", nil, nil), path)
		assert.Equal(t, http.StatusUnauthorized, call(t, "GET", base+path, "wrong", nil, nil), path)
	}
	assert.Equal(t, http.StatusUnauthorized, call(t, "POST", base+"/api/missions", "", missionIn("x", 1, 1, "p"), nil))
	assert.Equal(t, http.StatusCreated, call(t, "POST", base+"/api/missions", "s3cret", missionIn("x", 1, 1, "p"), nil))
	assert.Equal(t, http.StatusOK, call(t, "GET", base+"/api/missions", "s3cret", nil, nil))
	assert.Equal(t, http.StatusOK, call(t, "GET", base+"/healthz", "", nil, nil))
	resp, err := http.Get(base + "/api/inbox")
	require.NoError(t, err)
	resp.Body.Close()
	assert.True(t, strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer"))
}
