package server

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Version is the relay's version, reported by initialize and /readyz.
const Version = "0.1.0"

// Server is a running relay: its database, upstream client and stream hub.
// Serve it with Serve, or mount Handler on a server of your own; stop it
// with Shutdown (drain) or Close.
type Server struct {
	cfg     Config
	log     *slog.Logger
	store   store
	hub     *hub
	up      *upstream
	auth    *authCache
	metrics *metrics
	handler http.Handler
	calls   *inflight
	lists   *listCache
	trace   *callTrace

	draining   atomic.Bool
	baseCtx    context.Context
	cancelBase context.CancelFunc

	mu        sync.Mutex
	httpSrv   *http.Server
	served    chan struct{} // closed when Serve returns
	stopOnce  sync.Once
	lastDrain DrainReport
}

// Stats is a snapshot of a server's load.
type Stats struct {
	// InflightRequests is the number of POST /mcp requests being served.
	InflightRequests int64
	// UpstreamQueued is the number of upstream requests waiting for a
	// worker (sync mode; always 0 in async mode).
	UpstreamQueued int64
	// UpstreamActive is the number of upstream requests in their round trip.
	UpstreamActive int64
	// UserStreams and WorkspaceStreams are the held GET /mcp (and
	// subscriptions/listen) and GET /api/events streams.
	UserStreams, WorkspaceStreams int64
}

// New validates cfg, opens the database (applying migrations), and starts
// the stream hub and, with PostgreSQL, the LISTEN connection. ctx bounds
// the start-up only.
func New(ctx context.Context, cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	lg := cfg.Logger
	if lg == nil {
		lg = slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	}
	s := &Server{
		cfg:   cfg,
		log:   lg,
		hub:   newHub(cfg.KeepaliveInterval, cfg.StreamWriteTimeout, lg),
		up:    newUpstream(cfg),
		auth:  newAuthCache(cfg.AuthCacheTTL),
		calls: newInflight(),
		lists: newListCache(cfg.ListCacheTTL),
		trace: newCallTrace(cfg, lg),
	}
	s.baseCtx, s.cancelBase = context.WithCancel(context.Background())
	deliver := s.hub.publish
	if d := cfg.Faults.EventDelay; d > 0 {
		deliver = func(ev event) { time.AfterFunc(d, func() { s.hub.publish(ev) }) }
	}
	var err error
	if cfg.DatabaseURL != "" {
		s.store, err = openPostgres(ctx, cfg.DatabaseURL, cfg.DBMaxConns, cfg.Faults.NoReconnect, deliver, lg)
	} else {
		s.store, err = openSQLite(ctx, cfg.SQLitePath, cfg.DBMaxConns, deliver)
	}
	if err != nil {
		s.hub.close(nil)
		s.up.close()
		return nil, err
	}
	if cfg.Metrics {
		s.metrics = newMetrics(s)
	}
	s.handler = s.routes()
	return s, nil
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	handle := func(pattern, route string, h http.Handler) {
		mux.Handle(pattern, s.metrics.instrument(route, h))
	}
	handle("POST /mcp", "mcp_post", http.HandlerFunc(s.handleMCP))
	handle("GET /mcp", "mcp_stream", s.handleStream(userStream))
	handle("GET /api/events", "events", s.handleStream(workspaceStream))
	handle("GET /api/dashboard", "dashboard", http.HandlerFunc(s.handleDashboard))
	handle("GET /api/whoami", "whoami", http.HandlerFunc(s.handleWhoami))
	handle("GET /healthz", "healthz", http.HandlerFunc(s.handleHealthz))
	handle("GET /readyz", "readyz", http.HandlerFunc(s.handleReadyz))
	if s.cfg.Pprof {
		mux.HandleFunc("GET /debug/pprof/", pprof.Index)
		mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	}
	if s.metrics != nil {
		mux.Handle("GET /metrics", s.metrics.handler())
	} else {
		mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
			writeJSONError(w, http.StatusNotFound, "metrics are off: start the relay with RELAY_METRICS=1")
		})
	}
	return mux
}

// Handler returns the relay's HTTP handler.
func (s *Server) Handler() http.Handler { return s.handler }

// Config returns the configuration the server runs with.
func (s *Server) Config() Config { return s.cfg }

// Stats returns a snapshot of the server's load.
func (s *Server) Stats() Stats {
	return Stats{
		InflightRequests: s.calls.count(),
		UpstreamQueued:   s.up.queued.Load(),
		UpstreamActive:   s.up.active.Load(),
		UserStreams:      s.hub.heldStreams(userStream),
		WorkspaceStreams: s.hub.heldStreams(workspaceStream),
	}
}

// Serve accepts connections on l until Shutdown or Close. It returns
// http.ErrServerClosed after Shutdown or Close, like http.Server.Serve.
func (s *Server) Serve(l net.Listener) error {
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		BaseContext:       func(net.Listener) context.Context { return s.baseCtx },
		ErrorLog:          log.New(slogWriter{s.log}, "", 0),
	}
	s.mu.Lock()
	if s.httpSrv != nil || s.draining.Load() {
		s.mu.Unlock()
		return errors.New("relay: Serve called twice, or after Shutdown")
	}
	s.httpSrv = srv
	s.served = make(chan struct{})
	s.mu.Unlock()
	defer close(s.served)
	return srv.Serve(l)
}

// ListenAndServe listens on Config.Addr and serves.
func (s *Server) ListenAndServe() error {
	l, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("relay: listen on RELAY_ADDR=%q: %w", s.cfg.Addr, err)
	}
	return s.Serve(l)
}

// drainGrace bounds each wait of a drain past its timeout: for cancelled
// calls to return, for the last events to be written, for the answers of
// cancelled calls to be sent.
const drainGrace = 5 * time.Second

// DrainReport says how a Shutdown went.
type DrainReport struct {
	// Duration is the time from the start of Shutdown to streams closed.
	Duration time.Duration
	// Policy is the drain policy (Config.DrainPolicy).
	Policy string
	// Inflight is the number of requests being served when the drain
	// began: the accepted calls the drain had to settle.
	Inflight int64
	// Abandoned is the number of requests still running when the drain
	// timeout ran out; they were cancelled.
	Abandoned int64
	// Streams is the number of streams sent the final event and closed.
	Streams int64
}

// Shutdown drains the server: it stops accepting connections, lets
// in-flight requests finish within the drain policy's budget
// (Config.DrainBudget: all of them, DrainTimeout, or none), cancelling
// those still running then, or when ctx ends, delivers the events they wrote,
// sends every open stream a final "event: shutdown" and closes it, and
// closes the database. The drain's duration is logged. Calling it again
// returns the first result.
func (s *Server) Shutdown(ctx context.Context) (DrainReport, error) {
	s.stopOnce.Do(func() {
		var rep DrainReport
		start := time.Now()
		s.draining.Store(true)
		rep.Policy, rep.Inflight = s.cfg.DrainPolicy, s.calls.count()
		budget := s.cfg.DrainBudget()
		s.log.Info("relay: draining", "inflight", rep.Inflight, "streams", s.hub.heldStreams(userStream)+s.hub.heldStreams(workspaceStream),
			"drain_policy", rep.Policy, "drain_budget", budget.String(), "drain_timeout", s.cfg.DrainTimeout)
		s.mu.Lock()
		srv, served := s.httpSrv, s.served
		s.mu.Unlock()

		dctx, cancel := context.WithTimeout(ctx, budget)
		defer cancel()
		// net/http waits longer than the calls: a call cancelled at the
		// drain timeout still writes its answer (a tool error), which is
		// sent after its handler returns; closing the connections at the
		// drain timeout itself would lose it.
		hctx, hcancel := context.WithTimeout(ctx, budget+drainGrace)
		defer hcancel()
		httpDone := make(chan error, 1)
		if srv != nil {
			// Closes the listeners and idle connections now, then waits for
			// active requests; held (non-hijacked) streams end below.
			go func() { httpDone <- srv.Shutdown(hctx) }()
		} else {
			httpDone <- nil
		}
		if err := s.calls.wait(dctx); err != nil {
			rep.Abandoned = s.calls.count()
			s.log.Warn("relay: drain budget reached; cancelling the requests still running", "abandoned", rep.Abandoned, "drain_policy", rep.Policy)
			s.cancelBase()
			wctx, wcancel := context.WithTimeout(context.Background(), drainGrace)
			s.calls.wait(wctx)
			wcancel()
		}
		bctx, bcancel := context.WithTimeout(context.Background(), drainGrace)
		if err := s.store.barrier(bctx); err != nil {
			s.log.Warn("relay: waiting for the last events failed", "err", err)
		}
		bcancel()
		rep.Streams = s.hub.heldStreams(userStream) + s.hub.heldStreams(workspaceStream)
		s.hub.close(shutdownFrame)
		if srv != nil {
			if err := <-httpDone; err != nil {
				srv.Close()
			}
			<-served
		}
		s.cancelBase()
		s.up.close()
		s.store.close()
		rep.Duration = time.Since(start)
		s.log.Info("relay: drained", "drain_duration", rep.Duration.String(), "drain_seconds", rep.Duration.Seconds(),
			"drain_policy", rep.Policy, "inflight", rep.Inflight, "abandoned", rep.Abandoned, "streams_closed", rep.Streams)
		s.lastDrain = rep
	})
	return s.lastDrain, nil
}

// Close stops the server at once: in-flight requests are cancelled,
// streams get the final event and are closed, the database is closed.
func (s *Server) Close() error {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.Shutdown(ctx)
	return err
}

// slogWriter sends net/http's error log lines to slog at debug level
// (they are mostly clients hanging up).
type slogWriter struct{ l *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	w.l.Debug("relay: http: " + string(p))
	return len(p), nil
}
