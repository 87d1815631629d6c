package server

import (
	"context"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/headroom-dev/headroom/examples/internal/kit"
	"github.com/headroom-dev/headroom/examples/orch/schema"
)

// Version is the orchestrator's version, reported by /readyz.
const Version = "0.1.0"

// Server is a running orch process: its pool, LISTEN connection and, by
// role, the API and stream hub, the orchestrator worker, or the runner.
// Serve it with Serve, or mount Handler on a server of your own; stop it
// with Shutdown (drain) or Close.
type Server struct {
	cfg          Config
	log          *slog.Logger
	pool         *pgxpool.Pool
	version      int
	hub          *hub
	ticks        *ticker
	runner       *runnerState
	metrics      *metrics
	vendorClient *http.Client
	handler      http.Handler
	tickCount    [2]atomic.Int64 // [0] event, [1] sweep

	listening  atomic.Bool
	cancelBg   context.CancelFunc
	listenDone chan struct{}
	workerDone chan struct{}

	http      *kit.HTTPServer
	stopOnce  sync.Once
	lastDrain DrainReport
}

// New validates cfg, connects to the database (applying the migrations),
// starts the LISTEN connection (and returns once it is in force) and, by
// role, the orchestrator worker or the runner's claim loop. ctx bounds
// the start-up.
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
		ticks:      newTicker(),
		listenDone: make(chan struct{}),
		workerDone: make(chan struct{}),
	}
	if cfg.runs() {
		jobCtx, cancelJob := context.WithCancel(context.Background())
		s.runner = &runnerState{wake: make(chan struct{}, 1), claimDone: make(chan struct{}), jobCtx: jobCtx, cancelJob: cancelJob}
		s.vendorClient = newVendorClient(cfg.VendorAllowPrivate, cfg.RunnerSlots)
		if cfg.VendorURL == "" {
			lg.Warn("orch: ORCH_VENDOR_URL is empty: every attempt succeeds at once without calling a vendor")
		}
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
		return nil, fmt.Errorf("orch: LISTEN on ORCH_LISTEN_URL (or DATABASE_URL) not in force at start: %w", ctx.Err())
	}
	if cfg.orchestrates() {
		go s.runWorker(bg)
	} else {
		close(s.workerDone)
	}
	if s.runner != nil {
		cctx, stop := context.WithCancel(bg)
		s.runner.stopClaim = stop
		go s.claimLoop(cctx)
	}
	s.handler = s.routes()
	s.http = kit.NewHTTPServer("orch", s.log, s.handler)
	return s, nil
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	handle := func(pattern, route string, h http.HandlerFunc) {
		mux.Handle(pattern, s.metrics.instrument(route, s.authorize(h)))
	}
	if s.cfg.servesAPI() {
		handle("POST /api/missions", "create", s.handleCreate)
		handle("POST /api/missions/batch", "create_batch", s.handleCreateBatch)
		handle("POST /api/missions/approve", "approve_batch", s.handleApproveBatch)
		handle("POST /api/missions/{id}/approve", "approve", s.handleApprove)
		handle("GET /api/missions", "missions", s.handleList)
		handle("GET /api/missions/{id}", "mission", s.handleMission)
		handle("GET /api/missions/{id}/events", "events", s.handleEvents)
		handle("GET /api/inbox", "inbox", s.handleInbox)
		handle("GET /api/scoreboard", "scoreboard", s.handleScoreboard)
		handle("GET /api/budgets", "budgets", s.handleBudgets)
	} else {
		mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
			writeError(w, http.StatusNotFound, fmt.Sprintf("this orch process runs ORCH_ROLE=%s: it serves no API; ask a web process", s.cfg.Role))
		})
	}
	mux.Handle("GET /healthz", s.metrics.instrument("healthz", http.HandlerFunc(s.handleHealthz)))
	mux.Handle("GET /readyz", s.metrics.instrument("readyz", http.HandlerFunc(s.handleReadyz)))
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
			writeError(w, http.StatusNotFound, "metrics are off: start orch with ORCH_METRICS=1")
		})
	}
	return mux
}

// authorize requires "Authorization: Bearer <ORCH_TOKEN>" when a token is
// set; 401 otherwise.
func (s *Server) authorize(h http.HandlerFunc) http.HandlerFunc {
	if s.cfg.Token == "" {
		return h
	}
	want := []byte(s.cfg.Token)
	return func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="orch"`)
			writeError(w, http.StatusUnauthorized, "send Authorization: Bearer <ORCH_TOKEN>")
			return
		}
		h(w, r)
	}
}

// Handler returns the HTTP handler.
func (s *Server) Handler() http.Handler { return s.handler }

// Config returns the configuration the server runs with.
func (s *Server) Config() Config { return s.cfg }

// HeldStreams returns the number of live streams held open.
func (s *Server) HeldStreams() int64 { return s.hub.held.Load() }

// Ticks returns the mission ticks the worker ran: woken by events, and
// found by the sweep.
func (s *Server) Ticks() (event, sweep int64) { return s.tickCount[0].Load(), s.tickCount[1].Load() }

func (s *Server) handleHealthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok", "role": s.cfg.Role})
}

// handleReadyz answers 200 when the database answers at the schema
// version this build expects and LISTEN is in force; 503 otherwise and
// while draining.
func (s *Server) handleReadyz(w http.ResponseWriter, r *http.Request) {
	ans := map[string]any{"version": Version, "role": s.cfg.Role, "schema_version": s.version,
		"application_name": s.cfg.appName(), "db_max_conns": s.cfg.DBMaxConns, "pooler": s.cfg.Pooler,
		"metrics": s.cfg.Metrics, "auth": s.cfg.Token != "", "listening": s.listening.Load(),
		"listen_channels": s.cfg.channels(), "draining": s.http.Draining(),
		"keepalive_interval": s.cfg.KeepaliveInterval.String(), "sweep_interval": s.cfg.SweepInterval.String(),
		"max_attempts": s.cfg.MaxAttempts}
	if s.runner != nil {
		ans["runner_name"] = s.cfg.RunnerName
		ans["runner_slots"] = s.cfg.RunnerSlots
		ans["runner_running"] = s.runner.running.Load()
		ans["claim_interval"] = s.cfg.ClaimInterval.String()
		ans["vendor_timeout"] = s.cfg.VendorTimeout.String()
		ans["vendor"] = s.cfg.VendorURL != ""
	}
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
	// Requeued is the number of a runner's attempts cut off at the drain
	// timeout and given back to the queue.
	Requeued int64
	// TimedOut says requests or attempts were still running at
	// ORCH_DRAIN_TIMEOUT and were cut off.
	TimedOut bool
}

// Shutdown drains the process: /readyz turns 503, live streams get "event:
// shutdown" and end, the listener closes and requests in flight finish
// within ORCH_DRAIN_TIMEOUT (or until ctx ends); a runner stops claiming
// and lets its attempts finish within the same timeout, then gives the
// rest back to the queue; then the worker and LISTEN stop and the pool
// closes. Calling it again returns the first result.
func (s *Server) Shutdown(ctx context.Context) (DrainReport, error) {
	s.stopOnce.Do(func() {
		start := time.Now()
		var rep DrainReport
		s.http.StartDraining()
		s.log.Info("orch: draining", "role", s.cfg.Role, "streams", s.hub.held.Load(), "drain_timeout", s.cfg.DrainTimeout.String())
		rep.Streams = s.hub.close()
		dctx, cancel := context.WithTimeout(ctx, s.cfg.DrainTimeout)
		defer cancel()
		rep.TimedOut = s.http.Drain(dctx)
		if r := s.runner; r != nil {
			r.stopClaim()
			<-r.claimDone
			idle := make(chan struct{})
			go func() { r.wg.Wait(); close(idle) }()
			select {
			case <-idle:
			case <-dctx.Done():
			}
			if r.running.Load() == 0 {
				<-idle // only bookkeeping left
			}
			select {
			case <-idle:
			default:
				rep.TimedOut = true
				s.log.Warn("orch: drain timeout reached; giving the running attempts back to the queue", "attempts", r.running.Load())
				r.cancelJob()
				<-idle
				rep.Requeued = r.abandoned.Load()
			}
			r.cancelJob()
		}
		s.cancelBg()
		<-s.workerDone
		<-s.listenDone
		s.pool.Close()
		rep.Duration = time.Since(start)
		s.log.Info("orch: drained", "role", s.cfg.Role, "drain_seconds", rep.Duration.Seconds(), "streams_closed", rep.Streams,
			"requeued", rep.Requeued, "timed_out", rep.TimedOut)
		s.lastDrain = rep
	})
	return s.lastDrain, nil
}

// Close stops the process at once: requests in flight are cut off and a
// runner's attempts go back to the queue.
func (s *Server) Close() error {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.Shutdown(ctx)
	return err
}
