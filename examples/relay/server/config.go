package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"time"

	"github.com/headroom-dev/headroom/examples/internal/kit"
)

// Upstream modes, the values of Config.UpstreamMode.
const (
	// ModeAsync gives every upstream request its own goroutine on a pooled,
	// keep-alive HTTP client: any number run at once.
	ModeAsync = "async"
	// ModeSync runs upstream requests on Config.Workers fixed workers, each
	// held for the whole round trip; further requests queue for a worker.
	ModeSync = "sync"
)

// Drain policies, the values of Config.DrainPolicy: what a drain (SIGTERM)
// does with the calls in flight.
const (
	// DrainComplete waits for every accepted call to finish, however long
	// its upstream takes (at most CallTimeout); Config.DrainTimeout is not
	// used.
	DrainComplete = "complete"
	// DrainBudgeted waits up to Config.DrainTimeout, then cancels the calls
	// still running (their clients get a tool error).
	DrainBudgeted = "budgeted"
	// DrainMinimal waits for nothing: the calls in flight are cancelled at
	// once (their clients get a tool error) and the relay exits.
	DrainMinimal = "minimal"
)

// Call-trace postures, the values of Config.CallTrace: how many tools/call
// requests write a trace record (one JSON log line with the call's spans).
const (
	// TraceOff writes no trace records.
	TraceOff = "off"
	// TraceSampled writes one call in Config.TraceEvery.
	TraceSampled = "sampled"
	// TraceFull writes every call's.
	TraceFull = "full"
)

// MaxCallTimeout is the cap on Config.CallTimeout: 50 s.
const MaxCallTimeout = 50 * time.Second

// Config configures a relay. The zero value is not usable: start from
// [DefaultConfig] or [ConfigFromEnv].
type Config struct {
	// Addr is the listen address Serve's caller uses (RELAY_ADDR); default ":8080".
	Addr string
	// DatabaseURL is a postgres:// URL (DATABASE_URL); empty selects the
	// embedded SQLite file at SQLitePath.
	DatabaseURL string
	// SQLitePath is the SQLite database file (RELAY_SQLITE_PATH); default "relay.db".
	SQLitePath string
	// UpstreamMode is ModeAsync or ModeSync (RELAY_UPSTREAM_MODE); default async.
	UpstreamMode string
	// Workers is the number of upstream workers in sync mode (RELAY_WORKERS); default 32.
	Workers int
	// Metrics turns on Prometheus metrics at GET /metrics (RELAY_METRICS=1); default off.
	Metrics bool
	// Pprof serves net/http/pprof's profiles at /debug/pprof/
	// (RELAY_PPROF=1), for load tests that take the relay's CPU and heap
	// profiles during a hold; default off.
	Pprof bool
	// DrainTimeout bounds how long Shutdown waits for in-flight calls
	// (RELAY_DRAIN_TIMEOUT); default 30 s.
	DrainTimeout time.Duration
	// DrainPolicy is DrainComplete, DrainBudgeted or DrainMinimal
	// (RELAY_DRAIN_POLICY); default budgeted.
	DrainPolicy string
	// ListCacheTTL is how long a user's tools/list answer is kept and
	// answered again without asking the upstream (RELAY_LIST_CACHE_TTL);
	// default 0, no cache.
	ListCacheTTL time.Duration
	// CallTrace is TraceOff, TraceSampled or TraceFull (RELAY_CALL_TRACE):
	// which tools/call requests log a trace record, at info level; default
	// off.
	CallTrace string
	// TraceEvery is the sampling period of TraceSampled: one call in
	// TraceEvery is traced (RELAY_TRACE_EVERY); default 100.
	TraceEvery int
	// Faults are the injected regressions (RELAY_FAULT); default none.
	Faults Faults
	// CallTimeout bounds one upstream request (RELAY_CALL_TIMEOUT); default
	// and maximum 50 s.
	CallTimeout time.Duration
	// KeepaliveInterval is the time between keepalive comments on held
	// streams (RELAY_KEEPALIVE_INTERVAL); default 15 s.
	KeepaliveInterval time.Duration
	// StreamWriteTimeout bounds one write to a held stream; a stream whose
	// client does not take an event within it is closed
	// (RELAY_STREAM_WRITE_TIMEOUT); default 5 s.
	StreamWriteTimeout time.Duration
	// MaxBodyBytes is the largest accepted request body in bytes; larger
	// bodies get 413 (RELAY_MAX_BODY_BYTES); default 1 MiB.
	MaxBodyBytes int64
	// MaxUpstreamBytes is the largest upstream answer in bytes; a larger one
	// is a tool error (RELAY_MAX_UPSTREAM_BYTES); default 16 MiB.
	MaxUpstreamBytes int64
	// AuthCacheTTL is how long a validated token is remembered; 0 queries
	// the database on every request (RELAY_AUTH_CACHE_TTL); default 5 s.
	AuthCacheTTL time.Duration
	// DBMaxConns is the PostgreSQL pool size, or the number of SQLite read
	// connections (RELAY_DB_MAX_CONNS); default 20.
	DBMaxConns int
	// ReplayLimit is the most events a stream resends after Last-Event-ID
	// (RELAY_REPLAY_LIMIT); default 1000.
	ReplayLimit int
	// TrustedProxies are the peers whose X-Forwarded-For the relay believes
	// when it derives a client's address (GET /api/whoami)
	// (RELAY_TRUSTED_PROXIES: networks, "private_ranges" or "none");
	// default PrivateRanges.
	TrustedProxies []netip.Prefix
	// LogLevel is the minimum level logged (RELAY_LOG_LEVEL: debug, info,
	// warn, error); default info.
	LogLevel slog.Level
	// Logger receives the relay's logs; nil logs JSON to stderr at LogLevel.
	Logger *slog.Logger
}

// DefaultConfig returns the configuration with every default filled in.
func DefaultConfig() Config {
	return Config{
		Addr:               ":8080",
		SQLitePath:         "relay.db",
		UpstreamMode:       ModeAsync,
		Workers:            32,
		DrainTimeout:       30 * time.Second,
		DrainPolicy:        DrainBudgeted,
		CallTrace:          TraceOff,
		TraceEvery:         100,
		CallTimeout:        MaxCallTimeout,
		KeepaliveInterval:  15 * time.Second,
		StreamWriteTimeout: 5 * time.Second,
		MaxBodyBytes:       1 << 20,
		MaxUpstreamBytes:   16 << 20,
		AuthCacheTTL:       5 * time.Second,
		DBMaxConns:         20,
		ReplayLimit:        1000,
		LogLevel:           slog.LevelInfo,
		TrustedProxies:     PrivateRanges,
	}
}

// ConfigFromEnv returns DefaultConfig overridden by the environment, read
// through getenv (os.Getenv in a program). Every bad value is reported, each
// error naming its variable and what would be accepted.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	c := DefaultConfig()
	e := kit.NewEnv(getenv)
	e.String("RELAY_ADDR", &c.Addr)
	e.String("DATABASE_URL", &c.DatabaseURL)
	e.String("RELAY_SQLITE_PATH", &c.SQLitePath)
	e.String("RELAY_UPSTREAM_MODE", &c.UpstreamMode)
	e.Int("RELAY_WORKERS", &c.Workers)
	e.Bool("RELAY_METRICS", &c.Metrics)
	e.Bool("RELAY_PPROF", &c.Pprof)
	e.DurationOrZero("RELAY_DRAIN_TIMEOUT", &c.DrainTimeout)
	e.String("RELAY_DRAIN_POLICY", &c.DrainPolicy)
	e.DurationOrZero("RELAY_LIST_CACHE_TTL", &c.ListCacheTTL)
	e.String("RELAY_CALL_TRACE", &c.CallTrace)
	e.Int("RELAY_TRACE_EVERY", &c.TraceEvery)
	e.Parse("RELAY_FAULT", func(v string) (err error) { c.Faults, err = ParseFaults(v); return err })
	e.Duration("RELAY_CALL_TIMEOUT", &c.CallTimeout)
	e.Duration("RELAY_KEEPALIVE_INTERVAL", &c.KeepaliveInterval)
	e.Duration("RELAY_STREAM_WRITE_TIMEOUT", &c.StreamWriteTimeout)
	e.Int64("RELAY_MAX_BODY_BYTES", &c.MaxBodyBytes)
	e.Int64("RELAY_MAX_UPSTREAM_BYTES", &c.MaxUpstreamBytes)
	e.DurationOrZero("RELAY_AUTH_CACHE_TTL", &c.AuthCacheTTL)
	e.Int("RELAY_DB_MAX_CONNS", &c.DBMaxConns)
	e.Int("RELAY_REPLAY_LIMIT", &c.ReplayLimit)
	e.Parse("RELAY_TRUSTED_PROXIES", func(v string) (err error) { c.TrustedProxies, err = ParseTrustedProxies(v); return err })
	e.LogLevel("RELAY_LOG_LEVEL", &c.LogLevel)
	if err := e.Err(); err != nil {
		return c, err
	}
	return c, c.Validate()
}

// Validate reports every field that is out of range, naming the environment
// variable that sets it.
func (c Config) Validate() error {
	var errs []error
	if c.UpstreamMode != ModeAsync && c.UpstreamMode != ModeSync {
		errs = append(errs, fmt.Errorf("RELAY_UPSTREAM_MODE=%q: want %q or %q", c.UpstreamMode, ModeAsync, ModeSync))
	}
	if c.Workers <= 0 {
		errs = append(errs, fmt.Errorf("RELAY_WORKERS=%d: want a positive number of workers", c.Workers))
	}
	if c.DatabaseURL != "" && !strings.HasPrefix(c.DatabaseURL, "postgres://") && !strings.HasPrefix(c.DatabaseURL, "postgresql://") {
		errs = append(errs, fmt.Errorf("DATABASE_URL: want a postgres:// URL, or leave it empty for SQLite at RELAY_SQLITE_PATH"))
	}
	if c.DatabaseURL == "" && (c.SQLitePath == "" || strings.ContainsAny(c.SQLitePath, "?#")) {
		errs = append(errs, fmt.Errorf("RELAY_SQLITE_PATH=%q: want a file path without '?' or '#'", c.SQLitePath))
	}
	if c.DrainTimeout < 0 {
		errs = append(errs, fmt.Errorf("RELAY_DRAIN_TIMEOUT=%s: want zero or more", c.DrainTimeout))
	}
	if c.DrainPolicy != DrainComplete && c.DrainPolicy != DrainBudgeted && c.DrainPolicy != DrainMinimal {
		errs = append(errs, fmt.Errorf("RELAY_DRAIN_POLICY=%q: want %q, %q or %q", c.DrainPolicy, DrainComplete, DrainBudgeted, DrainMinimal))
	}
	if c.ListCacheTTL < 0 {
		errs = append(errs, fmt.Errorf("RELAY_LIST_CACHE_TTL=%s: want zero (no cache) or more", c.ListCacheTTL))
	}
	if c.CallTrace != TraceOff && c.CallTrace != TraceSampled && c.CallTrace != TraceFull {
		errs = append(errs, fmt.Errorf("RELAY_CALL_TRACE=%q: want %q, %q or %q", c.CallTrace, TraceOff, TraceSampled, TraceFull))
	}
	if c.TraceEvery <= 0 {
		errs = append(errs, fmt.Errorf("RELAY_TRACE_EVERY=%d: want a positive number of calls", c.TraceEvery))
	}
	if c.CallTimeout <= 0 || c.CallTimeout > MaxCallTimeout {
		errs = append(errs, fmt.Errorf("RELAY_CALL_TIMEOUT=%s: want more than 0 and at most %s", c.CallTimeout, MaxCallTimeout))
	}
	if c.KeepaliveInterval <= 0 {
		errs = append(errs, fmt.Errorf("RELAY_KEEPALIVE_INTERVAL=%s: want a positive duration", c.KeepaliveInterval))
	}
	if c.StreamWriteTimeout <= 0 {
		errs = append(errs, fmt.Errorf("RELAY_STREAM_WRITE_TIMEOUT=%s: want a positive duration", c.StreamWriteTimeout))
	}
	if c.MaxBodyBytes <= 0 {
		errs = append(errs, fmt.Errorf("RELAY_MAX_BODY_BYTES=%d: want a positive number of bytes", c.MaxBodyBytes))
	}
	if c.MaxUpstreamBytes <= 0 {
		errs = append(errs, fmt.Errorf("RELAY_MAX_UPSTREAM_BYTES=%d: want a positive number of bytes", c.MaxUpstreamBytes))
	}
	if c.AuthCacheTTL < 0 {
		errs = append(errs, fmt.Errorf("RELAY_AUTH_CACHE_TTL=%s: want zero (no cache) or more", c.AuthCacheTTL))
	}
	if c.DBMaxConns <= 0 {
		errs = append(errs, fmt.Errorf("RELAY_DB_MAX_CONNS=%d: want a positive number of connections", c.DBMaxConns))
	}
	if c.ReplayLimit <= 0 {
		errs = append(errs, fmt.Errorf("RELAY_REPLAY_LIMIT=%d: want a positive number of events", c.ReplayLimit))
	}
	return errors.Join(errs...)
}

// DrainBudget returns how long a drain waits for the calls in flight
// before cancelling them, by DrainPolicy: CallTimeout plus the time to
// record a call (complete), DrainTimeout (budgeted) or 0 (minimal).
func (c Config) DrainBudget() time.Duration {
	switch c.DrainPolicy {
	case DrainComplete:
		return c.CallTimeout + recordTimeout
	case DrainMinimal:
		return 0
	}
	return c.DrainTimeout
}

// Dialect returns "postgres" when DatabaseURL is set, else "sqlite".
func (c Config) Dialect() string {
	if c.DatabaseURL != "" {
		return "postgres"
	}
	return "sqlite"
}
