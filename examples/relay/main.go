// Command relay is Headroom's reference system under test: a small MCP-style
// tool gateway (see package server and README.md). It is configured by
// environment variables, serves until SIGTERM or SIGINT, then drains: it
// stops accepting, lets in-flight calls finish within RELAY_DRAIN_TIMEOUT,
// sends open streams a final event, logs the drain duration and exits 0.
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
	"github.com/headroom-dev/headroom/examples/relay/server"
)

func main() { os.Exit(run()) }

func run() int {
	cfg, err := server.ConfigFromEnv(os.Getenv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "relay: bad configuration, not starting:\n%v\n", err)
		return 2
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	cfg.Logger = log

	return kit.Process[server.DrainReport]{
		Name: "relay", Addr: cfg.Addr, AddrVar: "RELAY_ADDR", Log: log,
		Start: func(ctx context.Context) (kit.Server[server.DrainReport], error) {
			return server.New(ctx, cfg) // Run reads the server only without an error
		},
		Listening: []any{"database", cfg.Dialect(),
			"upstream_mode", cfg.UpstreamMode, "metrics", cfg.Metrics, "faults", cfg.Faults.String(), "version", server.Version},
	}.Run()
}
