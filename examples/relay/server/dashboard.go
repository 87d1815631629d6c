package server

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// DefaultDashboardWindow is the window GET /api/dashboard aggregates when
// the request names none: 24 h.
const DefaultDashboardWindow = 24 * time.Hour

// MaxDashboardWindow is the longest window accepted: 400 days.
const MaxDashboardWindow = 400 * 24 * time.Hour

// Dashboard is the answer of GET /api/dashboard: the workspace's usage over
// a window, in total and per tool.
type Dashboard struct {
	// WorkspaceID is the caller's workspace.
	WorkspaceID int64 `json:"workspace_id"`
	// Window is the window's length as Go spells a duration ("24h0m0s").
	Window string `json:"window"`
	// Since is the window's start, RFC 3339 UTC.
	Since string `json:"since"`
	// Calls and Errors are totals over all tools.
	Calls  int64 `json:"calls"`
	Errors int64 `json:"errors"`
	// ErrorRate is Errors/Calls, 0 to 1.
	ErrorRate float64 `json:"error_rate"`
	// Tools has one line per tool, most calls first.
	Tools []ToolStats `json:"tools"`
}

// handleDashboard serves GET /api/dashboard?window=24h.
func (s *Server) handleDashboard(w http.ResponseWriter, r *http.Request) {
	p, ok := s.principalFor(w, r)
	if !ok {
		return
	}
	window, err := parseWindow(r.URL.Query().Get("window"))
	if err != nil {
		writeJSONError(w, http.StatusBadRequest, err.Error())
		return
	}
	since := time.Now().Add(-window).UTC()
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	tools, err := s.store.dashboard(ctx, p.WorkspaceID, since, s.cfg.Faults.DashboardNPlusOne)
	if err != nil {
		if r.Context().Err() != nil {
			return
		}
		s.log.Error("relay: dashboard query failed", "workspace_id", p.WorkspaceID, "err", err)
		writeJSONError(w, http.StatusServiceUnavailable, "the dashboard query failed; retry")
		return
	}
	d := Dashboard{WorkspaceID: p.WorkspaceID, Window: window.String(), Since: since.Format(time.RFC3339Nano), Tools: tools}
	if d.Tools == nil {
		d.Tools = []ToolStats{}
	}
	for _, t := range tools {
		d.Calls += t.Calls
		d.Errors += t.Errors
	}
	if d.Calls > 0 {
		d.ErrorRate = float64(d.Errors) / float64(d.Calls)
	}
	writeJSON(w, http.StatusOK, d)
}

// parseWindow parses a window such as "24h", "90m" or "7d"; "" is the default.
func parseWindow(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return DefaultDashboardWindow, nil
	}
	var d time.Duration
	var err error
	if days, ok := strings.CutSuffix(v, "d"); ok {
		var n int64
		n, err = strconv.ParseInt(days, 10, 64)
		if n > int64(MaxDashboardWindow/(24*time.Hour)) {
			n = -1
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		d, err = time.ParseDuration(v)
	}
	if err != nil || d <= 0 || d > MaxDashboardWindow {
		return 0, fmt.Errorf("window=%q: want a positive duration up to 400d, such as 1h, 24h or 7d", v)
	}
	return d, nil
}
