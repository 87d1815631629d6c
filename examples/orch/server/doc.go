// Package server is orch, Headroom's third reference system under test: a
// small agent orchestrator on PostgreSQL (see ../README.md). People create
// missions of tasks and approve them; the orchestrator worker queues each
// mission's tasks at most max_parallel at a time; runners claim queued
// tasks and run attempts against a vendor (an LLM stand-in), retrying
// failures; every step is an event, streamed live to each mission's board.
//
// A program runs it with
//
//	cfg, err := server.ConfigFromEnv(os.Getenv)
//	srv, err := server.New(ctx, cfg)
//	go srv.Serve(listener)
//	…
//	srv.Shutdown(ctx)
//
// Work travels between processes (web, worker, runners) through
// PostgreSQL LISTEN/NOTIFY, each process holding one direct connection.
package server
