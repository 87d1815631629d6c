// Command mockupstream runs the mock upstream: an MCP-style JSON-RPC tool
// server (POST / and /mcp), a plain /echo endpoint, GET /healthz and the
// admin endpoints, with the configurable slow, failing, bulky behaviour of
// package mockupstream. It is configured by environment variables only
// (see the package documentation), needs no files or shell, and builds
// static:
//
//	CGO_ENABLED=0 go build ./mockupstream/cmd/mockupstream
//	PORT=8765 MODEL=calibrated SEED=1 ./mockupstream
//
// It logs "mockupstream listening on <addr>" once listening, exits 2 with a
// message naming the variable when the configuration is invalid, and on
// SIGTERM or SIGINT gives calls in flight one second, then exits 0.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/headroom-dev/headroom/mockupstream"
)

// shutdownGrace is how long calls in flight may finish after SIGTERM.
const shutdownGrace = time.Second

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	os.Exit(run(ctx, os.Getenv, os.Stderr))
}

// run serves until ctx is done and returns the exit code.
func run(ctx context.Context, getenv func(string) string, stderr io.Writer) int {
	cfg, err := mockupstream.ConfigFromEnv(getenv)
	if err != nil {
		fmt.Fprintf(stderr, "mockupstream: invalid configuration: %v\n", err)
		return 2
	}
	cfg.Logger = slog.New(slog.NewTextHandler(stderr, nil))
	s, err := mockupstream.New(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "mockupstream: invalid configuration: %v\n", err)
		return 2
	}
	l, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		fmt.Fprintf(stderr, "mockupstream: listen on %s: %v\n", cfg.Addr, err)
		return 1
	}
	host, _, _ := net.SplitHostPort(cfg.Addr)
	_, port, _ := net.SplitHostPort(l.Addr().String())
	fmt.Fprintf(stderr, "mockupstream listening on %s\n", net.JoinHostPort(host, port))

	served := make(chan error, 1)
	go func() { served <- s.Serve(l) }()
	select {
	case err := <-served:
		fmt.Fprintf(stderr, "mockupstream: serve: %v\n", err)
		return 1
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := s.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		fmt.Fprintf(stderr, "mockupstream: shutdown: %v\n", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(stderr, "mockupstream: serve: %v\n", err)
		return 1
	}
	return 0
}
