package server

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// handleStream serves a held event stream: GET /mcp (the user's events)
// and GET /api/events (the workspace's events). A Last-Event-ID header
// first replays the events written after that id (up to
// Config.ReplayLimit).
func (s *Server) handleStream(kind streamKind) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !acceptsEventStream(r) {
			writeJSONError(w, http.StatusNotAcceptable, "this endpoint is an event stream: send Accept: text/event-stream")
			return
		}
		p, ok := s.principalFor(w, r)
		if !ok {
			return
		}
		if msg := versionHeaderError(r); kind == userStream && msg != "" {
			writeJSONError(w, http.StatusBadRequest, msg)
			return
		}
		var lastID int64
		if v := strings.TrimSpace(r.Header.Get("Last-Event-ID")); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				writeJSONError(w, http.StatusBadRequest, "Last-Event-ID must be an event id (a non-negative integer)")
				return
			}
			lastID = n
		}
		s.serveStream(w, r, p, kind, lastID, "")
	}
}

// serveStream holds p's stream of kind as the answer to r: GET /mcp,
// GET /api/events, or a subscriptions/listen request (listenID, its
// JSON-RPC id, not ""), which is a user stream that starts with the
// subscription's acknowledgment.
//
// The connection is hijacked after the response header is written, the
// stream is registered with the hub and the handler returns: from then on
// the hub's goroutines write events and keepalives to it, and no goroutine
// or buffer is held for it. Events after lastID (none when 0) are replayed
// first.
func (s *Server) serveStream(w http.ResponseWriter, r *http.Request, p principal, kind streamKind, lastID int64, listenID string) {
	if s.draining.Load() {
		writeJSONError(w, http.StatusServiceUnavailable, "the relay is shutting down; reconnect to another replica")
		return
	}
	// The stream starts out replaying: live events that arrive before
	// the header and the missed events are written wait in its queue.
	st := &stream{kind: kind, key: p.WorkspaceID, replaying: true, listenID: listenID}
	if kind == userStream {
		st.key = p.UserID
	}
	if n := s.cfg.Faults.StreamMemory; n > 0 {
		st.ballast = make([]byte, n)
		for i := 0; i < len(st.ballast); i += 4096 {
			st.ballast[i] = 1 // touch every page so it is resident
		}
	}
	first := connectedFrame
	if listenID != "" {
		first = listenAckFrame(listenID)
	}

	var held *heldWriter
	var head *frame
	if !s.cfg.Faults.StreamGoroutine {
		if hw, h, err := s.hijack(w, r, first); err == nil {
			st.w, head = hw, h
		} else if !errors.Is(err, http.ErrNotSupported) {
			s.log.Debug("relay: stream hijack failed", "err", err)
			return
		}
	}
	if st.w == nil {
		held = &heldWriter{w: w, rc: http.NewResponseController(w), gone: r.Context().Done(), done: make(chan struct{})}
		setStreamHeaders(w.Header())
		st.w, head = held, first
	}
	if !s.hub.add(st) {
		st.sendReplayed(head, s.cfg.StreamWriteTimeout)
		st.close(shutdownFrame, s.cfg.StreamWriteTimeout)
		return
	}
	if err := st.sendReplayed(head, s.cfg.StreamWriteTimeout); err != nil {
		st.shard.drop(st, nil)
		return
	}
	s.hub.watchPeer(st)
	s.replay(r.Context(), st, p, lastID)
	if held != nil {
		select {
		case <-held.done:
		case <-r.Context().Done():
			st.shard.drop(st, nil)
		}
	}
}

// hijack takes the connection over from net/http and returns it with the
// response header and first, the stream's first frame, to write. The bufio
// buffers net/http hands back are dropped.
func (s *Server) hijack(w http.ResponseWriter, r *http.Request, first *frame) (*hijackedWriter, *frame, error) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return nil, nil, err
	}
	hw := &hijackedWriter{conn: conn, chunked: r.ProtoAtLeast(1, 1)}
	head := make([]byte, 0, 256)
	if hw.chunked {
		head = append(head, "HTTP/1.1 200 OK\r\n"...)
	} else {
		head = append(head, "HTTP/1.0 200 OK\r\n"...)
	}
	head = append(head, "Content-Type: text/event-stream\r\nCache-Control: no-cache\r\nX-Accel-Buffering: no\r\nConnection: close\r\nDate: "...)
	head = time.Now().UTC().AppendFormat(head, http.TimeFormat)
	if hw.chunked {
		head = append(head, "\r\nTransfer-Encoding: chunked"...)
	}
	head = append(head, "\r\n\r\n"...)
	head = append(head, hw.bytes(first)...)
	return hw, &frame{raw: head, chunk: head}, nil
}

func setStreamHeaders(h http.Header) {
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
}

// replay writes the events after lastID (none when 0), then the live
// events that came in meanwhile, then hands the stream to the hub.
func (s *Server) replay(ctx context.Context, st *stream, p principal, lastID int64) {
	if lastID <= 0 {
		if err := st.finishReplay(nil, s.cfg.StreamWriteTimeout); err != nil {
			st.shard.drop(st, nil)
		}
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	var userID int64
	if st.kind == userStream {
		userID = p.UserID
	}
	events, err := s.store.eventsAfter(ctx, p.WorkspaceID, userID, lastID, s.cfg.ReplayLimit)
	if err != nil {
		s.log.Warn("relay: replay after Last-Event-ID failed; the stream goes on live", "err", err)
	}
	sent := make(map[int64]bool, len(events))
	for _, ev := range events {
		if err := st.sendReplayed(newFrame(ev), s.cfg.StreamWriteTimeout); err != nil {
			break
		}
		sent[ev.ID] = true
	}
	if err := st.finishReplay(sent, s.cfg.StreamWriteTimeout); err != nil {
		st.shard.drop(st, nil)
	}
}

// acceptsEventStream reports whether the Accept header allows text/event-stream.
func acceptsEventStream(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		for _, part := range strings.Split(v, ",") {
			mt, _, _ := strings.Cut(strings.TrimSpace(part), ";")
			if strings.EqualFold(strings.TrimSpace(mt), "text/event-stream") {
				return true
			}
		}
	}
	return false
}
