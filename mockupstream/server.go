package mockupstream

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// maxRequestBody is the largest request body read: 1 MiB.
const maxRequestBody = 1 << 20

// Server is the mock upstream: an http.Handler for the endpoints, and a
// server that holds slow calls cheaply (see [HoldPark]) when it serves them
// itself through [Server.Serve].
type Server struct {
	cfg     Config
	log     *slog.Logger
	initial Behavior // the starting behaviour, seed filled in, for Reset
	model   atomic.Pointer[Model]
	stats   counters
	mux     *http.ServeMux
	hs      *http.Server
	ln      *requeueListener

	holdMu sync.Mutex
	holds  map[*held]struct{} // parked calls not yet ended

	drainCh, abortCh     chan struct{}
	drainOnce, abortOnce sync.Once
}

// ownConnKey marks requests on connections the Server's own http.Server
// accepted, which it can park and hand back.
type ownConnKey struct{}

// New returns a server for cfg, or an error naming the first bad field.
func New(cfg Config) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	m, err := NewModel(cfg.Behavior)
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg:     cfg,
		log:     cfg.Logger,
		initial: m.Behavior(),
		holds:   make(map[*held]struct{}),
		drainCh: make(chan struct{}),
		abortCh: make(chan struct{}),
	}
	s.model.Store(m)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("POST /{$}", s.serveRPC)
	mux.HandleFunc("POST /mcp", s.serveRPC)
	mux.HandleFunc("/echo", s.serveEcho)
	mux.HandleFunc("GET /admin/behavior", s.admin(s.getBehavior))
	mux.HandleFunc("POST /admin/behavior", s.admin(s.postBehavior))
	mux.HandleFunc("PUT /admin/behavior", s.admin(s.postBehavior))
	mux.HandleFunc("GET /admin/stats", s.admin(s.getStats))
	mux.HandleFunc("POST /admin/reset", s.admin(s.postReset))
	s.mux = mux
	s.hs = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		ConnContext: func(ctx context.Context, _ net.Conn) context.Context {
			return context.WithValue(ctx, ownConnKey{}, true)
		},
	}
	return s, nil
}

// ServeHTTP serves the endpoints. Served through another http.Server (such
// as httptest's), slow calls are held by sleeping in the handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Serve accepts connections on l and serves them until Shutdown or Close;
// it returns http.ErrServerClosed then. Call it once.
func (s *Server) Serve(l net.Listener) error {
	s.ln = newRequeueListener(l)
	return s.hs.Serve(s.ln)
}

// Shutdown stops accepting, lets calls in flight finish until ctx is done,
// then cuts off the rest as Close does. Answers written while shutting
// down carry "Connection: close".
func (s *Server) Shutdown(ctx context.Context) error {
	s.drainOnce.Do(func() { close(s.drainCh) })
	err := s.hs.Shutdown(ctx)
	if err == nil {
		err = s.waitHolds(ctx)
	}
	if err != nil {
		_ = s.Close()
	}
	return err
}

// Close closes the listener and every connection now, held calls included;
// their requests end as "aborted".
func (s *Server) Close() error {
	s.drainOnce.Do(func() { close(s.drainCh) })
	s.abortOnce.Do(func() { close(s.abortCh) })
	err := s.hs.Close()
	s.holdMu.Lock()
	for h := range s.holds {
		h.aborted.Store(true)
		h.conn.Close()
	}
	s.holdMu.Unlock()
	// Their connections are closed: the goroutines end at once.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return errors.Join(err, s.waitHolds(ctx))
}

// waitHolds waits until no call is parked or ctx is done.
func (s *Server) waitHolds(ctx context.Context) error {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		s.holdMu.Lock()
		n := len(s.holds)
		s.holdMu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

func (s *Server) draining() bool {
	select {
	case <-s.drainCh:
		return true
	default:
		return false
	}
}

// Behavior returns the behaviour in force, seed and defaults filled in.
func (s *Server) Behavior() Behavior { return s.model.Load().Behavior() }

// SetBehavior validates b and puts it in force for every request read from
// now on; calls already held keep their drawn fate. A zero b.Seed picks a
// random seed.
func (s *Server) SetBehavior(b Behavior) error {
	m, err := NewModel(b)
	if err != nil {
		return err
	}
	s.model.Store(m)
	return nil
}

// Stats returns the counters.
func (s *Server) Stats() Stats { return s.stats.snapshot() }

// Reset restores the behaviour the server started with (its seed too, so
// draws repeat from the start) and zeroes the counters.
func (s *Server) Reset() {
	m, err := NewModel(s.initial)
	if err != nil {
		panic(err) // the initial behaviour was valid
	}
	s.model.Store(m)
	s.stats.reset()
}

// end counts a request ended and logs it when LogRequests is on.
func (s *Server) end(k Kind, o Outcome, bytes int64, start time.Time) {
	s.stats.end(k, o, bytes)
	if s.cfg.LogRequests {
		s.log.Info("request", "method", k.String(), "outcome", o.String(), "bytes", bytes, "duration", time.Since(start))
	}
}

// authorized reports whether r carries the bearer token AUTH_MODE asks for.
func (s *Server) authorized(r *http.Request) bool {
	if s.cfg.Auth != AuthBearer {
		return true
	}
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || token == "" {
		return false
	}
	return s.cfg.Token == "" || subtle.ConstantTimeCompare([]byte(token), []byte(s.cfg.Token)) == 1
}

// reject answers a counted request with an HTTP 4xx at once.
func (s *Server) reject(w http.ResponseWriter, k Kind, status int, msg string, start time.Time) {
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="mockupstream"`)
	}
	s.write(w, k, HTTP4xx, &reply{status: status, contentType: "text/plain; charset=utf-8", head: []byte(msg + "\n")}, start)
}

// readBody reads r's body up to maxRequestBody. On failure it has answered
// (413) or counted the client as gone, and returns false.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, k Kind, start time.Time) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBody))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			s.reject(w, k, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over %d bytes", maxRequestBody), start)
			return nil, false
		}
		s.end(k, ClientGone, 0, start)
		return nil, false
	}
	return body, true
}

// faultReply returns the answer for outcome o when it replaces the normal
// one (an injected 5xx), or nil.
func (s *Server) faultReply(m *Model, o Outcome) *reply {
	if o != HTTP5xx {
		return nil
	}
	st := m.b.Faults.Status
	return &reply{status: st, contentType: "text/plain; charset=utf-8", head: fmt.Appendf(nil, "mockupstream: injected HTTP %d\n", st)}
}

// deliver ends a drawn request: after d.Delay it writes rep, or resets, or
// hangs up. It parks the connection when it can and sleeps otherwise.
func (s *Server) deliver(w http.ResponseWriter, r *http.Request, k Kind, d Draw, rep *reply, start time.Time) {
	if d.Delay > 0 || d.Outcome == Hang {
		if s.cfg.Hold == HoldPark && r.Context().Value(ownConnKey{}) != nil && s.park(w, r, k, d, rep, start) {
			return
		}
		t := time.NewTimer(d.Delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			if d.Outcome == Hang {
				s.end(k, Hang, 0, start)
			} else {
				s.end(k, ClientGone, 0, start)
			}
			return
		case <-s.abortCh:
			s.end(k, Aborted, 0, start)
			hangUp(w, false)
			return
		}
	}
	switch d.Outcome {
	case Hang:
		s.end(k, Hang, 0, start)
		hangUp(w, false)
	case Reset:
		s.end(k, Reset, 0, start)
		hangUp(w, true)
	default:
		s.write(w, k, d.Outcome, rep, start)
	}
}

// write answers rep through w and counts the request with outcome o. It
// counts first, so that a client that has read the answer finds it
// counted; if the answer fails to go out it is moved to ClientGone.
func (s *Server) write(w http.ResponseWriter, k Kind, o Outcome, rep *reply, start time.Time) {
	if s.draining() {
		w.Header().Set("Connection", "close")
	}
	n := rep.bodyLen()
	if rep.headOnly {
		n = 0
	}
	s.end(k, o, n, start)
	if written, err := rep.writeTo(w); err != nil {
		s.stats.undeliver(o, n-written)
	}
}

// hangUp closes the request's connection without an answer, with a reset
// when reset is set.
func hangUp(w http.ResponseWriter, reset bool) {
	c, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler) // net/http closes the connection
	}
	if reset {
		resetConn(c)
		return
	}
	c.Close()
}

// park hijacks the connection and holds the call without net/http's
// goroutine and buffers; it reports false when the connection cannot be
// hijacked.
func (s *Server) park(w http.ResponseWriter, r *http.Request, k Kind, d Draw, rep *reply, start time.Time) bool {
	due := start.Add(d.Delay)
	c, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return false
	}
	h := &held{s: s, conn: c, kind: k, draw: d, rep: rep, start: start, close: r.Close}
	if n := brw.Reader.Buffered(); n > 0 {
		b, _ := brw.Reader.Peek(n)
		h.pending = append([]byte(nil), b...)
	}
	s.holdMu.Lock()
	select {
	case <-s.abortCh:
		s.holdMu.Unlock()
		c.Close()
		s.end(k, Aborted, 0, start)
		return true
	default:
	}
	s.holds[h] = struct{}{}
	s.holdMu.Unlock()
	go h.wait(due)
	return true
}

// untrack forgets a held call that ended.
func (s *Server) untrack(h *held) {
	s.holdMu.Lock()
	delete(s.holds, h)
	s.holdMu.Unlock()
}
