package server

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/headroom-dev/headroom/examples/desk/schema"
	"github.com/headroom-dev/headroom/examples/internal/kit"
)

// Version is the desk's version, reported by /readyz.
const Version = "0.1.0"

// Server is a running desk: its pool, caches, stream hub, LISTEN
// connection and (by role) background worker. Serve it with Serve, or
// mount Handler on a server of your own; stop it with Shutdown (drain) or
// Close.
type Server struct {
	cfg        Config
	log        *slog.Logger
	pool       *pgxpool.Pool
	version    int
	hub        *hub
	access     *accessCache
	counts     *countsCache
	metrics    *metrics
	mailClient *http.Client
	handler    http.Handler

	wake       chan struct{} // wakes the worker: new outbox rows
	listening  atomic.Bool
	cancelBg   context.CancelFunc
	listenDone chan struct{}
	workerDone chan struct{}

	http      *kit.HTTPServer
	stopOnce  sync.Once
	lastDrain DrainReport
}

// New validates cfg, connects to the database (applying the migrations),
// starts the LISTEN connection (and returns once it is in force) and, for
// RoleWorker and RoleAll, the background worker. ctx bounds the start-up.
func New(ctx context.Context, cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	lg := cfg.Logger
	if lg == nil {
		lg = slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	}
	pool, version, err := openPool(ctx, cfg)
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg: cfg, log: lg, pool: pool, version: version,
		hub:        newHub(),
		access:     newAccessCache(cfg.AccessCache, cfg.AccessCacheTTL),
		mailClient: newMailClient(cfg.MailAllowPrivate),
		wake:       make(chan struct{}, 1),
		listenDone: make(chan struct{}),
		workerDone: make(chan struct{}),
	}
	if cfg.SharedCounts {
		s.counts = newCountsCache(cfg.CountsTTL, func(ctx context.Context, unit int64) (*unitCounts, error) {
			return countUnit(ctx, s.pool, unit)
		})
	}
	if cfg.Metrics {
		s.metrics = newMetrics(s)
	}
	bg, cancel := context.WithCancel(context.Background())
	s.cancelBg = cancel
	ready := make(chan struct{})
	go s.listenLoop(bg, ready)
	select {
	case <-ready:
	case <-ctx.Done():
		cancel()
		<-s.listenDone
		pool.Close()
		return nil, fmt.Errorf("desk: LISTEN on DESK_LISTEN_URL (or DATABASE_URL) not in force at start: %w", ctx.Err())
	}
	if cfg.works() {
		go s.runWorker(bg)
	} else {
		close(s.workerDone)
	}
	s.handler = s.routes()
	s.http = kit.NewHTTPServer("desk", s.log, s.handler)
	return s, nil
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	handle := func(pattern, route string, h http.HandlerFunc) {
		mux.Handle(pattern, s.metrics.instrument(route, h))
	}
	if s.cfg.servesAPI() {
		handle("GET /api/me", "me", s.handleWhoami)
		handle("GET /api/inbox", "inbox", s.handleInbox)
		handle("GET /api/counts", "counts", s.handleCounts)
		handle("GET /api/cases/{id}", "case", s.handleCase)
		handle("POST /api/cases/{id}/notes", "note", s.handleWrite(schema.KindNote))
		handle("POST /api/cases/{id}/replies", "reply", s.handleWrite(schema.KindReply))
		handle("POST /api/cases/{id}/presence", "presence", s.handlePresence)
		handle("DELETE /api/cases/{id}/presence", "presence_leave", s.handlePresence)
		handle("GET /api/search", "search", s.handleSearch)
		handle("GET /api/stream", "stream", s.handleStream)
	} else {
		mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
			writeError(w, http.StatusNotFound, "this desk process runs DESK_ROLE=worker: it serves no API; ask a web process")
		})
	}
	handle("GET /healthz", "healthz", s.handleHealthz)
	handle("GET /readyz", "readyz", s.handleReadyz)
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
			writeError(w, http.StatusNotFound, "metrics are off: start the desk with DESK_METRICS=1")
		})
	}
	return mux
}

// Handler returns the desk's HTTP handler.
func (s *Server) Handler() http.Handler { return s.handler }

// Config returns the configuration the server runs with.
func (s *Server) Config() Config { return s.cfg }

// HeldStreams returns the number of live streams held open.
func (s *Server) HeldStreams() int64 { return s.hub.held.Load() }

func (s *Server) handleHealthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// handleReadyz answers 200 when the database answers at the schema
// version this build expects and LISTEN is in force; 503 otherwise and
// while draining.
func (s *Server) handleReadyz(w http.ResponseWriter, r *http.Request) {
	ans := map[string]any{"version": Version, "role": s.cfg.Role, "schema_version": s.version,
		"shared_counts": s.cfg.SharedCounts, "access_cache": s.cfg.AccessCache, "live": s.cfg.Live,
		"pooler": s.cfg.Pooler, "metrics": s.cfg.Metrics, "listening": s.listening.Load(), "draining": s.http.Draining()}
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	var problems []string
	if err := s.pool.Ping(ctx); err != nil {
		problems = append(problems, "database: "+err.Error())
	}
	if s.version != schema.Version() {
		problems = append(problems, fmt.Sprintf("schema version %d, want %d", s.version, schema.Version()))
	}
	if !s.listening.Load() {
		problems = append(problems, "LISTEN connection down")
	}
	if s.http.Draining() {
		problems = append(problems, "draining")
	}
	code := http.StatusOK
	if len(problems) > 0 {
		code = http.StatusServiceUnavailable
		ans["problems"] = problems
	}
	writeJSON(w, code, ans)
}

// Serve accepts connections on l until Shutdown or Close; it returns
// http.ErrServerClosed then, like http.Server.Serve.
func (s *Server) Serve(l net.Listener) error { return s.http.Serve(l) }

// DrainReport says how a Shutdown went.
type DrainReport struct {
	// Duration is the time from the start of Shutdown to the pool closed.
	Duration time.Duration
	// Streams is the number of live streams sent the final event.
	Streams int64
	// TimedOut says requests were still running at DESK_DRAIN_TIMEOUT and
	// were cut off.
	TimedOut bool
}

// Shutdown drains the desk: /readyz turns 503, live streams get "event:
// shutdown" and end, the listener closes and requests in flight finish
// within DESK_DRAIN_TIMEOUT (or until ctx ends); then the worker and the
// LISTEN connection stop and the pool closes. Calling it again returns
// the first result.
func (s *Server) Shutdown(ctx context.Context) (DrainReport, error) {
	s.stopOnce.Do(func() {
		start := time.Now()
		var rep DrainReport
		s.http.StartDraining()
		s.log.Info("desk: draining", "streams", s.hub.held.Load(), "drain_timeout", s.cfg.DrainTimeout.String())
		rep.Streams = s.hub.close()
		dctx, cancel := context.WithTimeout(ctx, s.cfg.DrainTimeout)
		rep.TimedOut = s.http.Drain(dctx)
		cancel()
		s.cancelBg()
		<-s.workerDone
		<-s.listenDone
		s.pool.Close()
		rep.Duration = time.Since(start)
		s.log.Info("desk: drained", "drain_seconds", rep.Duration.Seconds(), "streams_closed", rep.Streams, "timed_out", rep.TimedOut)
		s.lastDrain = rep
	})
	return s.lastDrain, nil
}

// Close stops the desk at once: requests in flight are cut off.
func (s *Server) Close() error {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.Shutdown(ctx)
	return err
}
