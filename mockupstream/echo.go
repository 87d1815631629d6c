package mockupstream

import (
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// serveEcho serves /echo, the plain HTTP endpoint for targets that are not
// MCP clients. Query parameters set the answer; what they leave out is drawn
// from the model as for tools/call:
//
//	delay   Go duration ("250ms") or milliseconds ("250"); replaces the
//	        drawn latency (a drawn hang still hangs).
//	status  HTTP status 200–599; setting it turns the drawn faults off.
//	bytes   body size in bytes, 0–64 MiB, of text/plain filler.
func (s *Server) serveEcho(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	s.stats.begin()
	if !s.authorized(r) {
		s.reject(w, KindEcho, http.StatusUnauthorized, "missing or wrong bearer token: send Authorization: Bearer <token>", start)
		return
	}
	if _, ok := s.readBody(w, r, KindEcho, start); !ok {
		return
	}
	q := r.URL.Query()
	bad := func(p, want string) {
		s.reject(w, KindEcho, http.StatusBadRequest, fmt.Sprintf("echo: query parameter %s=%q: give %s", p, q.Get(p), want), start)
	}
	var (
		delay  time.Duration
		status int
		size   int64
		err    error
	)
	hasDelay, hasStatus, hasBytes := q.Has("delay"), q.Has("status"), q.Has("bytes")
	if hasDelay {
		if delay, err = parseDelay(q.Get("delay")); err != nil {
			bad("delay", fmt.Sprintf("a Go duration such as 250ms or whole milliseconds, 0–%v", MaxLatency))
			return
		}
	}
	if hasStatus {
		st, err := strconv.Atoi(q.Get("status"))
		if err != nil || st < 200 || st > 599 {
			bad("status", "an HTTP status 200–599")
			return
		}
		status = st
	}
	if hasBytes {
		if size, err = strconv.ParseInt(q.Get("bytes"), 10, 64); err != nil || size < 0 || size > MaxBytes {
			bad("bytes", fmt.Sprintf("a byte count 0–%d", MaxBytes))
			return
		}
	}
	m := s.model.Load()
	d := m.Draw(KindEcho, m.Next())
	if hasStatus {
		d.Outcome = OK
		switch {
		case status >= 500:
			d.Outcome = HTTP5xx
		case status >= 400:
			d.Outcome = HTTP4xx
		}
	} else if d.Outcome == HTTP5xx {
		status = m.b.Faults.Status
	}
	if status == 0 {
		status = http.StatusOK
	}
	if hasDelay && d.Outcome != Hang {
		d.Delay = delay
	}
	if hasBytes {
		d.Bytes = size
	}
	rep := &reply{status: status, contentType: "text/plain; charset=utf-8", fill: d.Bytes, headOnly: r.Method == http.MethodHead}
	s.deliver(w, r, KindEcho, d, rep, start)
}

// parseDelay reads a Go duration or a whole number of milliseconds.
func parseDelay(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		ms, err2 := strconv.ParseInt(v, 10, 64)
		if err2 != nil || ms > int64(MaxLatency/time.Millisecond) {
			return 0, err
		}
		d = time.Duration(ms) * time.Millisecond
	}
	if d < 0 || d > MaxLatency {
		return 0, fmt.Errorf("out of range")
	}
	return d, nil
}
