package server

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// streamWriteTimeout bounds one write to a live stream; a client that
// does not take it in time loses its stream.
const streamWriteTimeout = 5 * time.Second

// replayBatch is how many events one replay query reads.
const replayBatch = 500

// handleEvents serves GET /api/missions/{id}/events: the mission board's
// live stream. It opens with ": connected", replays the mission's events
// after Last-Event-ID (or ?after=, or from the start), then carries the
// live ones as they are written by any process; ": keepalive" every
// ORCH_KEEPALIVE_INTERVAL. After mission.done or mission.failed it ends.
// A stream too far behind gets "event: resync" and ends; on drain every
// stream gets "event: shutdown".
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	var after int64
	if v := strings.TrimSpace(r.Header.Get("Last-Event-ID")); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			writeError(w, http.StatusBadRequest, "Last-Event-ID must be an event id")
			return
		}
		after = n
	} else if v := r.URL.Query().Get("after"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			writeError(w, http.StatusBadRequest, "after must be an event id")
			return
		}
		after = n
	}
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	exists, err := missionExists(ctx, s.pool, id)
	cancel()
	if err != nil {
		s.dbError(w, r, err)
		return
	}
	if !exists {
		writeError(w, http.StatusNotFound, errNotFound.Error())
		return
	}
	// Subscribe before the replay: an event written meanwhile comes in
	// both, and the live copy is skipped by id.
	st := s.hub.add(id)
	if st == nil {
		writeError(w, http.StatusServiceUnavailable, "this orch process is shutting down; reconnect to another")
		return
	}
	defer s.hub.remove(st)
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	write := func(b ...[]byte) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
		for _, f := range b {
			if _, err := w.Write(f); err != nil {
				return false
			}
		}
		return rc.Flush() == nil
	}
	if !write(connectedFrame) {
		return
	}
	last := after
	for {
		ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
		evs, err := eventsAfter(ctx, s.pool, id, last, replayBatch)
		cancel()
		if err != nil {
			s.log.Warn("orch: stream replay failed", "mission", id, "err", err.Error())
			return
		}
		frames := make([][]byte, 0, len(evs))
		end := false
		for _, e := range evs {
			it := eventItem(e)
			frames = append(frames, it.frame)
			last = e.ID
			if it.terminal {
				end = true
				break
			}
		}
		if !write(frames...) || end {
			return
		}
		if len(evs) < replayBatch {
			break
		}
	}
	tick := time.NewTicker(s.cfg.KeepaliveInterval)
	defer tick.Stop()
	for {
		select {
		case it := <-st.items:
			frames := make([][]byte, 0, 8)
			end := false
			for {
				if it.id > last {
					frames = append(frames, it.frame)
					last = it.id
					if it.terminal {
						end = true
						break
					}
				}
				more := false
				select {
				case it = <-st.items:
					more = true
				default:
				}
				if !more {
					break
				}
			}
			if !write(frames...) || end {
				return
			}
		case <-tick.C:
			if !write(keepaliveFrame) {
				return
			}
		case <-st.dropped:
			write(resyncFrame(last))
			return
		case <-st.quit:
			write(shutdownFrame)
			return
		case <-r.Context().Done():
			return
		}
	}
}
