package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/headroom-dev/headroom/examples/desk/schema"
)

// requestTimeout bounds the database work of one API request.
const requestTimeout = 15 * time.Second

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

// dbError answers a failed database call: 404 for a case out of reach,
// 503 when the client went away or the database timed out, else 500.
func (s *Server) dbError(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, errNotFound):
		writeError(w, http.StatusNotFound, err.Error())
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		writeError(w, http.StatusServiceUnavailable, "the database did not answer in time")
	default:
		s.log.Error("desk: database error", "path", r.URL.Path, "err", err.Error())
		writeError(w, http.StatusInternalServerError, "database error")
	}
}

// caseID parses the {id} path value; on failure it answers 400.
func caseID(w http.ResponseWriter, r *http.Request) (int64, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		writeError(w, http.StatusBadRequest, "the case id must be a positive integer")
		return 0, false
	}
	return id, true
}

// sidebar returns p's counts: from the unit's shared counts, or counted
// for p alone when shared counts are off.
func (s *Server) sidebar(ctx context.Context, p principal) (counts, error) {
	if s.counts == nil {
		s.metrics.countComputed("agent")
		return countAgent(ctx, s.pool, p)
	}
	u, computed, err := s.counts.get(ctx, p.UnitID)
	if err != nil {
		return counts{}, err
	}
	if computed {
		s.metrics.countComputed("shared")
	}
	return u.forAgent(p.AgentID), nil
}

// handleCounts serves GET /api/counts: the sidebar alone (what a client
// asks again when the live stream says something changed).
func (s *Server) handleCounts(w http.ResponseWriter, r *http.Request) {
	p, ok := s.principalFor(w, r)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	c, err := s.sidebar(ctx, p)
	if err != nil {
		s.dbError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, c)
}

// inboxAnswer is GET /api/inbox's answer.
type inboxAnswer struct {
	View    string    `json:"view"`
	Page    int       `json:"page"`
	PerPage int       `json:"per_page"`
	Total   int64     `json:"total"`
	Cases   []caseRow `json:"cases"`
	Counts  counts    `json:"counts"`
}

// handleInbox serves GET /api/inbox?view=mine|unassigned|open&page=N: a
// page of the view's open cases, last activity first, with the sidebar
// counts (the total of the view among them). The poll client asks this
// again every minute.
func (s *Server) handleInbox(w http.ResponseWriter, r *http.Request) {
	p, ok := s.principalFor(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	view := q.Get("view")
	if view == "" {
		view = schema.ViewMine
	}
	if _, ok := inboxQuery[view]; !ok {
		writeError(w, http.StatusBadRequest, "view must be mine, unassigned or open")
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
	per := s.cfg.PageSize
	list, err := listInbox(ctx, s.pool, p, view, per, (page-1)*per)
	if err != nil {
		s.dbError(w, r, err)
		return
	}
	c, err := s.sidebar(ctx, p)
	if err != nil {
		s.dbError(w, r, err)
		return
	}
	total := map[string]int64{schema.ViewMine: c.Mine, schema.ViewUnassigned: c.Unassigned, schema.ViewOpen: c.Open}[view]
	writeJSON(w, http.StatusOK, inboxAnswer{View: view, Page: page, PerPage: per, Total: total, Cases: list, Counts: c})
}

// handleCase serves GET /api/cases/{id}: the case page.
func (s *Server) handleCase(w http.ResponseWriter, r *http.Request) {
	p, ok := s.principalFor(w, r)
	if !ok {
		return
	}
	id, ok := caseID(w, r)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	page, err := loadCasePage(ctx, s.pool, p, id, s.cfg.PresenceTTL)
	if err != nil {
		s.dbError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

// maxMessageBytes bounds a note's or reply's body.
const maxMessageBytes = 64 << 10

// handleWrite serves POST /api/cases/{id}/notes and /replies with
// {"body": "…"}: 201 with the message written.
func (s *Server) handleWrite(kind string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, ok := s.principalFor(w, r)
		if !ok {
			return
		}
		id, ok := caseID(w, r)
		if !ok {
			return
		}
		var in struct {
			Body string `json:"body"`
		}
		raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
		if err != nil {
			writeError(w, http.StatusRequestEntityTooLarge, "the request body is larger than DESK_MAX_BODY_BYTES")
			return
		}
		if err := json.Unmarshal(raw, &in); err != nil {
			writeError(w, http.StatusBadRequest, `want a JSON object {"body": "…"}`)
			return
		}
		in.Body = strings.TrimSpace(in.Body)
		if in.Body == "" || len(in.Body) > maxMessageBytes {
			writeError(w, http.StatusBadRequest, "body must be 1 byte to 64 KiB of text")
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
		defer cancel()
		m, err := writeMessage(ctx, s.pool, p, id, kind, in.Body)
		if err != nil {
			s.dbError(w, r, err)
			return
		}
		writeJSON(w, http.StatusCreated, m)
	}
}

// maxSearchTerms bounds the words of a search.
const maxSearchTerms = 8

// tsQuery turns free text into a prefix-matching full-text query: each
// word (letters and digits) becomes word:*, all of them required. It
// returns "" when the text has no word.
func tsQuery(text string) string {
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	if len(words) > maxSearchTerms {
		words = words[:maxSearchTerms]
	}
	for i, w := range words {
		words[i] = w + ":*"
	}
	return strings.Join(words, " & ")
}

// handleSearch serves GET /api/search?q=…: the unit's cases (any status)
// whose subject, requester name or requester email matches every word
// (as a prefix), last activity first, at most one page.
func (s *Server) handleSearch(w http.ResponseWriter, r *http.Request) {
	p, ok := s.principalFor(w, r)
	if !ok {
		return
	}
	q := tsQuery(r.URL.Query().Get("q"))
	if q == "" {
		writeError(w, http.StatusBadRequest, "q must hold at least one word")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	list, err := searchCases(ctx, s.pool, p, q, s.cfg.PageSize)
	if err != nil {
		s.dbError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"query": q, "cases": list})
}

// handlePresence serves POST /api/cases/{id}/presence (the heartbeat of an
// open case page: the other agents viewing it) and DELETE (leaving it).
func (s *Server) handlePresence(w http.ResponseWriter, r *http.Request) {
	p, ok := s.principalFor(w, r)
	if !ok {
		return
	}
	id, ok := caseID(w, r)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	if r.Method == http.MethodDelete {
		if err := leave(ctx, s.pool, p, id); err != nil {
			s.dbError(w, r, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
		return
	}
	v, err := heartbeat(ctx, s.pool, p, id, s.cfg.PresenceTTL)
	if err != nil {
		s.dbError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"case_id": id, "viewers": v, "ttl_seconds": s.cfg.PresenceTTL.Seconds()})
}

// handleWhoami serves GET /api/me: the signed-in agent.
func (s *Server) handleWhoami(w http.ResponseWriter, r *http.Request) {
	p, ok := s.principalFor(w, r)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, p)
}
