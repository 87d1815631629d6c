package server

import (
	"fmt"
	"net/http"
	"time"
)

// streamWriteTimeout bounds one write to a live stream; a client that
// does not take it in time loses its stream.
const streamWriteTimeout = 5 * time.Second

// handleStream serves GET /api/stream: the agent's live stream. It opens
// with ": connected" and an "event: hello" naming the agent and unit, then
// carries an "event: change" for each change to a case of the unit (the
// client reloads the views named and recounts its sidebar), ": keepalive"
// every DESK_KEEPALIVE_INTERVAL, "event: resync" when events were dropped
// or may have been missed (reload everything), and "event: shutdown" when
// the desk drains.
func (s *Server) handleStream(w http.ResponseWriter, r *http.Request) {
	if !s.cfg.Live {
		writeError(w, http.StatusNotFound, "live updates are off (DESK_LIVE=0): poll GET /api/inbox")
		return
	}
	p, ok := s.principalFor(w, r)
	if !ok {
		return
	}
	st := s.hub.add(p)
	if st == nil {
		writeError(w, http.StatusServiceUnavailable, "the desk is shutting down; reconnect to another replica")
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
	hello := fmt.Appendf(nil, ": connected\n\nevent: hello\ndata: {\"agent_id\":%d,\"unit_id\":%d}\n\n", p.AgentID, p.UnitID)
	if !write(hello) {
		return
	}
	tick := time.NewTicker(s.cfg.KeepaliveInterval)
	defer tick.Stop()
	for {
		select {
		case f := <-st.events:
			frames := [][]byte{f}
		more:
			for len(frames) < streamQueue {
				select {
				case f := <-st.events:
					frames = append(frames, f)
				default:
					break more
				}
			}
			if st.missed.Swap(false) {
				frames = append(frames, resyncFrame)
			}
			if !write(frames...) {
				return
			}
		case <-tick.C:
			if !write(keepaliveFrame) {
				return
			}
		case <-st.quit:
			write(shutdownFrame)
			return
		case <-r.Context().Done():
			return
		}
	}
}
