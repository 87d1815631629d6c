// Package server is the desk, Headroom's second reference system under
// test: a small helpdesk on PostgreSQL (see ../README.md). Agents sign in
// with a bearer session token and work an inbox of cases (three views,
// sidebar counts), case pages, notes, email replies (through an outbox the
// worker sends to a mail stand-in), search and presence, with a live
// stream per agent that says when something changed.
//
// A program runs it with
//
//	cfg, err := server.ConfigFromEnv(os.Getenv)
//	srv, err := server.New(ctx, cfg)
//	go srv.Serve(listener)
//	…
//	srv.Shutdown(ctx)
//
// Changes travel between processes (several web replicas, the worker)
// through PostgreSQL LISTEN/NOTIFY on a dedicated direct connection.
package server
