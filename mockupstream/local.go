package mockupstream

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"
)

// Local is a mock upstream serving in this process on loopback, for tests
// and fixtures.
type Local struct {
	// URL is the root URL, such as "http://127.0.0.1:41234"; the MCP
	// endpoint is URL + "/mcp".
	URL string
	// Addr is the listening address, host:port.
	Addr string
	// Server is the running server.
	Server *Server
	// Client drives its admin endpoints.
	Client *Client

	done      chan error
	closeOnce sync.Once
	closeErr  error
}

// Start starts a server for cfg on cfg.Addr, or on a free loopback port
// when cfg.Addr is empty. Stop it with Close.
func Start(cfg Config) (*Local, error) {
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	s, err := New(cfg)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, err
	}
	url := "http://" + l.Addr().String()
	loc := &Local{URL: url, Addr: l.Addr().String(), Server: s, Client: &Client{BaseURL: url}, done: make(chan error, 1)}
	go func() { loc.done <- s.Serve(l) }()
	return loc, nil
}

// StartT starts a server as Start does and stops it in t.Cleanup; it fails
// the test if the server cannot start.
func StartT(t testing.TB, cfg Config) *Local {
	t.Helper()
	loc, err := Start(cfg)
	if err != nil {
		t.Fatalf("mockupstream: start: %v", err)
	}
	t.Cleanup(func() {
		if err := loc.Close(); err != nil {
			t.Errorf("mockupstream: close: %v", err)
		}
	})
	return loc
}

// Close shuts the server down, giving calls in flight one second, and
// waits for Serve to return. Later calls return the first call's result.
func (l *Local) Close() error {
	l.closeOnce.Do(func() { l.closeErr = l.close() })
	return l.closeErr
}

func (l *Local) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := l.Server.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = nil // the rest were cut off, as intended
	}
	if serr := <-l.done; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}
