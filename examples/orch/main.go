// Command orch is Headroom's third reference system under test: a small
// agent orchestrator on PostgreSQL (see package server and README.md).
// ORCH_ROLE picks what the process does: all (API and orchestrator), web,
// worker or runner. It is configured by environment variables, serves
// until SIGTERM or SIGINT, then drains: /readyz turns 503, live streams get
// a final event, requests and a runner's attempts in flight finish within
// ORCH_DRAIN_TIMEOUT (attempts still running then go back to the queue),
// and it exits 0.
//
// A bad environment value stops it at start (exit 2) with a message naming
// the variable.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/headroom-dev/headroom/examples/orch/server"
)

func main() { os.Exit(run()) }

func run() int {
	cfg, err := server.ConfigFromEnv(os.Getenv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "orch: bad configuration, not starting:\n%v\n", err)
		return 2
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	cfg.Logger = log

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()

	startCtx, cancel := context.WithTimeout(ctx, time.Minute)
	srv, err := server.New(startCtx, cfg)
	cancel()
	if err != nil {
		log.Error("orch: start failed", "err", err.Error())
		return 1
	}
	l, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		log.Error("orch: listen failed (ORCH_ADDR)", "addr", cfg.Addr, "err", err.Error())
		srv.Close()
		return 1
	}
	log.Info("orch: listening", "addr", l.Addr().String(), "role", cfg.Role, "pooler", cfg.Pooler,
		"db_max_conns", cfg.DBMaxConns, "metrics", cfg.Metrics, "version", server.Version)

	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	select {
	case <-ctx.Done():
		log.Info("orch: signal received; draining")
	case err := <-served:
		if !errors.Is(err, http.ErrServerClosed) {
			log.Error("orch: serve failed", "err", err.Error())
			srv.Close()
			return 1
		}
	}
	stop() // a second signal kills the process the default way
	if _, err := srv.Shutdown(context.Background()); err != nil {
		log.Error("orch: drain failed", "err", err.Error())
		return 1
	}
	return 0
}
