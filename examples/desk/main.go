// Command desk is Headroom's second reference system under test: a small
// helpdesk on PostgreSQL (see package server and README.md). It is
// configured by environment variables, serves until SIGTERM or SIGINT,
// then drains: /readyz turns 503, live streams get a final event, requests
// in flight finish within DESK_DRAIN_TIMEOUT, and it exits 0.
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

	"github.com/headroom-dev/headroom/examples/desk/server"
)

func main() { os.Exit(run()) }

func run() int {
	cfg, err := server.ConfigFromEnv(os.Getenv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "desk: bad configuration, not starting:\n%v\n", err)
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
		log.Error("desk: start failed", "err", err.Error())
		return 1
	}
	l, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		log.Error("desk: listen failed (DESK_ADDR)", "addr", cfg.Addr, "err", err.Error())
		srv.Close()
		return 1
	}
	log.Info("desk: listening", "addr", l.Addr().String(), "role", cfg.Role, "pooler", cfg.Pooler,
		"shared_counts", cfg.SharedCounts, "access_cache", cfg.AccessCache, "live", cfg.Live, "metrics", cfg.Metrics, "version", server.Version)

	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	select {
	case <-ctx.Done():
		log.Info("desk: signal received; draining")
	case err := <-served:
		if !errors.Is(err, http.ErrServerClosed) {
			log.Error("desk: serve failed", "err", err.Error())
			srv.Close()
			return 1
		}
	}
	stop() // a second signal kills the process the default way
	if _, err := srv.Shutdown(context.Background()); err != nil {
		log.Error("desk: drain failed", "err", err.Error())
		return 1
	}
	return 0
}
