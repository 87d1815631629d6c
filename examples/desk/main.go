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
	"fmt"
	"log/slog"
	"os"

	"github.com/headroom-dev/headroom/examples/desk/server"
	"github.com/headroom-dev/headroom/examples/internal/kit"
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

	return kit.Process[server.DrainReport]{
		Name: "desk", Addr: cfg.Addr, AddrVar: "DESK_ADDR", Log: log,
		Start: func(ctx context.Context) (kit.Server[server.DrainReport], error) {
			return server.New(ctx, cfg) // Run reads the server only without an error
		},
		Listening: []any{"role", cfg.Role, "pooler", cfg.Pooler,
			"shared_counts", cfg.SharedCounts, "access_cache", cfg.AccessCache, "live", cfg.Live, "metrics", cfg.Metrics, "version", server.Version},
	}.Run()
}
