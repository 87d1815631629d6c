package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/headroom-dev/headroom/examples/orch/schema"
)

// requestTimeout bounds the database work of one API request.
const requestTimeout = 15 * time.Second

// Limits on what a mission may hold.
const (
	maxTitleBytes    = 200
	maxPromptBytes   = 16 << 10
	maxTasks         = 100
	maxParallel      = 64
	maxBatchMissions = 1000
	defaultParallel  = 4
)

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code, b = http.StatusInternalServerError, []byte(`{"error":"encode the answer"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]string{"error": msg})
}

// dbError answers a failed database call: 404 for a missing mission, 409
// for a status conflict, 503 when the client went away or the database
// timed out, else 500.
func (s *Server) dbError(w http.ResponseWriter, r *http.Request, err error) {
	var conflict errConflict
	switch {
	case errors.Is(err, errNotFound):
		writeError(w, http.StatusNotFound, err.Error())
	case errors.As(err, &conflict):
		writeError(w, http.StatusConflict, conflict.msg)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		writeError(w, http.StatusServiceUnavailable, "the database did not answer in time")
	default:
		s.log.Error("orch: database error", "path", r.URL.Path, "err", err.Error())
		writeError(w, http.StatusInternalServerError, "database error")
	}
}

// pathID parses the {id} path value; on failure it answers 400.
func pathID(w http.ResponseWriter, r *http.Request) (int64, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		writeError(w, http.StatusBadRequest, "the mission id must be a positive integer")
		return 0, false
	}
	return id, true
}

// readJSON decodes the request body into v; on failure it answers 413 or
// 400 and returns false.
func (s *Server) readJSON(w http.ResponseWriter, r *http.Request, v any, shape string) bool {
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, "the request body is larger than ORCH_MAX_BODY_BYTES")
		return false
	}
	if err := json.Unmarshal(raw, v); err != nil {
		writeError(w, http.StatusBadRequest, "want a JSON object "+shape+": "+err.Error())
		return false
	}
	return true
}

// normalize checks a mission and fills its defaults (max_parallel 4, a
// task's title "task <n>"); the error names the first bad field.
func (m *MissionIn) normalize() error {
	m.Title = strings.TrimSpace(m.Title)
	if m.Title == "" || len(m.Title) > maxTitleBytes || !utf8.ValidString(m.Title) {
		return fmt.Errorf("title must be 1 to %d bytes of text", maxTitleBytes)
	}
	if m.MaxParallel == 0 {
		m.MaxParallel = defaultParallel
	}
	if m.MaxParallel < 1 || m.MaxParallel > maxParallel {
		return fmt.Errorf("max_parallel must be 1 to %d", maxParallel)
	}
	if len(m.Tasks) < 1 || len(m.Tasks) > maxTasks {
		return fmt.Errorf("tasks must hold 1 to %d tasks", maxTasks)
	}
	for i := range m.Tasks {
		t := &m.Tasks[i]
		t.Title = strings.TrimSpace(t.Title)
		if t.Title == "" {
			t.Title = fmt.Sprintf("task %d", i+1)
		}
		if len(t.Title) > maxTitleBytes || !utf8.ValidString(t.Title) {
			return fmt.Errorf("tasks[%d].title must be at most %d bytes of text", i, maxTitleBytes)
		}
		if strings.TrimSpace(t.Prompt) == "" || len(t.Prompt) > maxPromptBytes || !utf8.ValidString(t.Prompt) || strings.ContainsRune(t.Prompt, 0) {
			return fmt.Errorf("tasks[%d].prompt must be 1 byte to %d KiB of text", i, maxPromptBytes>>10)
		}
	}
	return nil
}

const missionShape = `{"title": "…", "max_parallel": 4, "tasks": [{"title": "…", "prompt": "…"}, …]}`

// handleCreate serves POST /api/missions: 201 with the draft mission and
// its tasks.
func (s *Server) handleCreate(w http.ResponseWriter, r *http.Request) {
	var in MissionIn
	if !s.readJSON(w, r, &in, missionShape) {
		return
	}
	if err := in.normalize(); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	out, err := createMissions(ctx, s.pool, []MissionIn{in}, s.metrics)
	if err != nil {
		s.dbError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, out[0])
}

// handleCreateBatch serves POST /api/missions/batch {"missions": […]}:
// every mission in one transaction; 201 {"missions": […]} in the order
// given.
func (s *Server) handleCreateBatch(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Missions []MissionIn `json:"missions"`
	}
	if !s.readJSON(w, r, &in, `{"missions": [`+missionShape+`, …]}`) {
		return
	}
	if len(in.Missions) < 1 || len(in.Missions) > maxBatchMissions {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("missions must hold 1 to %d missions", maxBatchMissions))
		return
	}
	for i := range in.Missions {
		if err := in.Missions[i].normalize(); err != nil {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("missions[%d]: %v", i, err))
			return
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	out, err := createMissions(ctx, s.pool, in.Missions, s.metrics)
	if err != nil {
		s.dbError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"missions": out})
}

// handleApprove serves POST /api/missions/{id}/approve: 200 when the draft
// is approved, 404 for no such mission, 409 when it is not a draft.
func (s *Server) handleApprove(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	if err := approveMission(ctx, s.pool, id, s.metrics); err != nil {
		s.dbError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"approved": 1, "ids": []int64{id}})
}

// handleApproveBatch serves POST /api/missions/approve {"ids": […]} or
// {"all_drafts": true}: every draft named (others are skipped) approved in
// one transaction; 200 {"approved": n, "ids": […]}.
func (s *Server) handleApproveBatch(w http.ResponseWriter, r *http.Request) {
	var in struct {
		IDs       []int64 `json:"ids"`
		AllDrafts bool    `json:"all_drafts"`
	}
	if !s.readJSON(w, r, &in, `{"ids": [1, 2, …]} or {"all_drafts": true}`) {
		return
	}
	if len(in.IDs) == 0 && !in.AllDrafts {
		writeError(w, http.StatusBadRequest, `name the missions: {"ids": [1, 2, …]} or {"all_drafts": true}`)
		return
	}
	if len(in.IDs) > 10000 || slices.ContainsFunc(in.IDs, func(id int64) bool { return id <= 0 }) {
		writeError(w, http.StatusBadRequest, "ids must be at most 10000 positive mission ids")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	ids, err := approveMissions(ctx, s.pool, in.IDs, in.AllDrafts, s.metrics)
	if err != nil {
		s.dbError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"approved": len(ids), "ids": ids})
}

// handleList serves GET /api/missions?status=&page=: 25 missions a page,
// newest first, with their task counts by status.
func (s *Server) handleList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	status := q.Get("status")
	if status != "" && !slices.Contains(schema.MissionStatuses, status) {
		writeError(w, http.StatusBadRequest, "status must be one of "+strings.Join(schema.MissionStatuses, ", ")+", or empty for all")
		return
	}
	page := 1
	if v := q.Get("page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 10000 {
			writeError(w, http.StatusBadRequest, "page must be an integer from 1 to 10000")
			return
		}
		page = n
	}
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	list, total, err := listMissions(ctx, s.pool, status, page)
	if err != nil {
		s.dbError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": status, "page": page, "per_page": PageSize, "total": total, "missions": list})
}

// handleMission serves GET /api/missions/{id}: the mission page.
func (s *Server) handleMission(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	p, err := loadMissionPage(ctx, s.pool, id)
	if err != nil {
		s.dbError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, p)
}

// handleInbox serves GET /api/inbox.
func (s *Server) handleInbox(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	in, err := loadInbox(ctx, s.pool)
	if err != nil {
		s.dbError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, in)
}

// handleScoreboard serves GET /api/scoreboard.
func (s *Server) handleScoreboard(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	sc, err := loadScoreboard(ctx, s.pool)
	if err != nil {
		s.dbError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"window": "1h", "runners": sc})
}

// handleBudgets serves GET /api/budgets.
func (s *Server) handleBudgets(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	b, err := loadBudgets(ctx, s.pool)
	if err != nil {
		s.dbError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, b)
}
