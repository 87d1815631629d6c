package server

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"
)

// callTrace writes trace records of tools/call requests (Config.CallTrace):
// one JSON log line per traced call, at info level, with the call's spans
// — the upstream round trip and the database write — as a tracing
// exporter would see them. Off, it costs one comparison per call.
type callTrace struct {
	mode  string
	every uint64
	n     atomic.Uint64
	log   *slog.Logger
}

func newCallTrace(cfg Config, log *slog.Logger) *callTrace {
	return &callTrace{mode: cfg.CallTrace, every: uint64(max(cfg.TraceEvery, 1)), log: log}
}

// sample reports whether the next call is traced: every call (full), one
// in every (sampled: the 1st, the every+1-th, …), or none (off).
func (c *callTrace) sample() bool {
	switch c.mode {
	case TraceFull:
		return true
	case TraceSampled:
		return (c.n.Add(1)-1)%c.every == 0
	}
	return false
}

// callSpans are the timings of one traced call.
type callSpans struct {
	start              time.Time
	upstream, record   time.Duration
	userID, workspace  int64
	tool, outcome      string
	bytes              int64
	traceID, sampledAs string
}

// write logs one trace record.
func (c *callTrace) write(ctx context.Context, s callSpans) {
	c.log.LogAttrs(ctx, slog.LevelInfo, "relay: call trace",
		slog.String("trace_id", s.traceID),
		slog.String("sampling", s.sampledAs),
		slog.Int64("user_id", s.userID),
		slog.Int64("workspace_id", s.workspace),
		slog.String("tool", s.tool),
		slog.String("outcome", s.outcome),
		slog.Time("started_at", s.start),
		slog.Int64("duration_us", time.Since(s.start).Microseconds()),
		slog.Int64("upstream_us", s.upstream.Microseconds()),
		slog.Int64("record_us", s.record.Microseconds()),
		slog.Int64("bytes", s.bytes),
	)
}
