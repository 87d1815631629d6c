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
	"fmt"
	"log/slog"
	"os"

	"github.com/headroom-dev/headroom/examples/internal/kit"
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

	return kit.Process[server.DrainReport]{
		Name: "orch", Addr: cfg.Addr, AddrVar: "ORCH_ADDR", Log: log,
		Start: func(ctx context.Context) (kit.Server[server.DrainReport], error) {
			return server.New(ctx, cfg) // Run reads the server only without an error
		},
		Listening: []any{"role", cfg.Role, "pooler", cfg.Pooler,
			"db_max_conns", cfg.DBMaxConns, "metrics", cfg.Metrics, "version", server.Version},
	}.Run()
}
