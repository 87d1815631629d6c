package kit

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// Server is what a service's process runs: its server, whose Shutdown
// drains it and reports how (R).
type Server[R any] interface {
	Serve(l net.Listener) error
	Shutdown(ctx context.Context) (R, error)
	Close() error
}

// Process is a service's main after its configuration is read: start,
// listen, serve until SIGTERM or SIGINT, then drain.
type Process[R any] struct {
	// Name prefixes every log line ("desk").
	Name string
	// Addr is where to listen, and AddrVar the variable that set it
	// ("DESK_ADDR"), named when listening fails.
	Addr, AddrVar string
	// Log receives the process's lines.
	Log *slog.Logger
	// Start makes the server; its ctx ends after a minute or at a signal.
	// Run uses the server only when the error is nil, so a constructor's
	// (*T, error) may be returned as it is, its nil *T with an error.
	Start func(ctx context.Context) (Server[R], error)
	// Listening are the attributes of the "listening" line (the role,
	// the features on, the version).
	Listening []any
}

// Run runs the process and returns its exit code: 1 when it cannot start,
// listen or serve, or its drain fails; 0 after a drain. A second signal
// during the drain kills the process the default way.
func (p Process[R]) Run() int {
	log := p.Log
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()

	startCtx, cancel := context.WithTimeout(ctx, time.Minute)
	srv, err := p.Start(startCtx)
	cancel()
	if err != nil {
		log.Error(p.Name+": start failed", "err", err.Error())
		return 1
	}
	l, err := net.Listen("tcp", p.Addr)
	if err != nil {
		log.Error(p.Name+": listen failed ("+p.AddrVar+")", "addr", p.Addr, "err", err.Error())
		srv.Close()
		return 1
	}
	log.Info(p.Name+": listening", append([]any{"addr", l.Addr().String()}, p.Listening...)...)

	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	select {
	case <-ctx.Done():
		log.Info(p.Name + ": signal received; draining")
	case err := <-served:
		if !errors.Is(err, http.ErrServerClosed) {
			log.Error(p.Name+": serve failed", "err", err.Error())
			srv.Close()
			return 1
		}
	}
	stop() // a second signal kills the process the default way
	if _, err := srv.Shutdown(context.Background()); err != nil {
		log.Error(p.Name+": drain failed", "err", err.Error())
		return 1
	}
	return 0
}
