package kit

import (
	"context"
	"errors"
	"log"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// HTTPServer serves a service's handler once and drains it: the part of
// a Server's start and Shutdown that is the same in every example.
type HTTPServer struct {
	name    string
	log     *slog.Logger
	handler http.Handler

	draining atomic.Bool
	mu       sync.Mutex
	srv      *http.Server
	served   chan struct{}
}

// NewHTTPServer returns a server for handler; name ("desk") prefixes its
// errors and log lines, which go to log.
func NewHTTPServer(name string, log *slog.Logger, handler http.Handler) *HTTPServer {
	return &HTTPServer{name: name, log: log, handler: handler}
}

// Serve accepts connections on l until Drain; it returns
// http.ErrServerClosed then, like http.Server.Serve. It serves once: a
// second call, or one after draining began, is an error.
func (h *HTTPServer) Serve(l net.Listener) error {
	srv := &http.Server{
		Handler:           h.handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          log.New(slogWriter{h.log, h.name}, "", 0),
	}
	h.mu.Lock()
	if h.srv != nil || h.draining.Load() {
		h.mu.Unlock()
		return errors.New(h.name + ": Serve called twice, or after Shutdown")
	}
	h.srv = srv
	h.served = make(chan struct{})
	h.mu.Unlock()
	defer close(h.served)
	return srv.Serve(l)
}

// StartDraining marks the server draining: readiness should answer 503,
// and Serve refuses to start.
func (h *HTTPServer) StartDraining() { h.draining.Store(true) }

// Draining reports whether draining began.
func (h *HTTPServer) Draining() bool { return h.draining.Load() }

// Drain begins draining, closes the listener and lets the requests in
// flight finish until ctx ends; then it closes the connections still open
// and says so in the log. It returns once Serve has, and reports whether
// it had to cut requests off.
func (h *HTTPServer) Drain(ctx context.Context) (timedOut bool) {
	h.StartDraining()
	h.mu.Lock()
	srv, served := h.srv, h.served
	h.mu.Unlock()
	if srv == nil {
		return false
	}
	if err := srv.Shutdown(ctx); err != nil {
		timedOut = true
		h.log.Warn(h.name+": drain timeout reached; closing the connections still open", "err", err.Error())
		srv.Close()
	}
	<-served
	return timedOut
}

// slogWriter sends net/http's error log lines to slog at debug level.
type slogWriter struct {
	l    *slog.Logger
	name string
}

func (w slogWriter) Write(p []byte) (int, error) {
	w.l.Debug(w.name + ": http: " + string(p))
	return len(p), nil
}
